#!/usr/bin/env bash
# The GPU measurements of the judge's scaling and of the grid tuner, one machine at a time,
# each GPU a lane of its own; every result is written as it comes (a time limit loses only
# what was in flight).
#
#   GEAK_TRITONBENCH_DATA=<GEAK-eval>/geak_eval/data/TritonBench/data \
#   RECORDS_DIR=<TritonBench>/LLM_generated/Bench_G_general_purpose bash bench/gpu_lanes.sh PART...
#
# PART:
#   throughput  bench/eval_throughput.sh over the six published TritonBench-G files on 1, 2
#               and 4 GPUs, locally ($EXECUTORS, default "local"; add ray where it imports):
#               the same work a GPU ($PER_GPU records, default 80, of one random order), after
#               a warm-up of at most $WARM_S seconds (default 180) over the largest pass's records
#   tune        per GPU K of N: bench/tune_published.py --shard K/N over $TUNE_RECORDS (default
#               the gpt-4o comp file) with $TUNE_VERDICTS if set, until $TUNE_LIMIT seconds
#               (default 380) of the script; then bench/tune_rocm_recovery.py on the K-th share
#               of $ROCM_TASKS (default: the 12 default tasks) until $ROCM_LIMIT (default 400)
#   tests       the tests that run on a GPU (tests/evaluator/test_gpu.py, test_eager.py,
#               tests/agent/test_geak_modules.py) on GPU 0 and recipes/quickstart-tuned.toml on
#               GPU 1, side by side
#   kbx         per GPU K of N: bench/kernelbenchx_references.py --shard K/N over $KBX_DATA (a
#               KernelBench-X checkout) until $KBX_LIMIT seconds (default 540) of the script, the
#               host's memory split between the lanes (resumable: run again with the same $OUT)
# Results go under $OUT (default ./gpu-out): throughput/, tune/ (one JSON per lane and kind), kbx/,
# lane-*.log. Tables afterwards: tune_published.py --table a.json,b.json,..., and the same
# for tune_rocm_recovery.py.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
T0=$(date +%s)
bash install.sh --no-deps > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
{ nvidia-smi -L; nproc; python --version; } > "$OUT/machine.txt" 2>&1
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd' ' -)
N=$(echo "$GPUS" | wc -w)
SIX=""
for f in output_gpt-4o_comp output_gpt-4o_simp output_claude-3-5-sonnet-20240620_comp \
         output_claude-3-5-sonnet-20240620_simp output_o1-2024-12-17_comp output_DeepSeek-R1_comp; do
  SIX="$SIX ${RECORDS_DIR:-.}/$f.jsonl"
done

lane() {  # GPU NAME COMMAND...: COMMAND on that GPU alone, its output in lane-NAME.log
  local gpu=$1 name=$2; shift 2
  ( export CUDA_VISIBLE_DEVICES=$gpu
    echo "== start $(( $(date +%s) - T0 )) s"; "$@"; echo "== rc $? at $(( $(date +%s) - T0 )) s"
  ) > "$OUT/lane-$name.log" 2>&1
}

tune_lane() {  # K: the K-th share of the records, then of the ROCm tasks
  local k=$1 left
  left=$(( ${TUNE_LIMIT:-380} - ($(date +%s) - T0) ))
  if [ "$left" -gt 10 ]; then
    python bench/tune_published.py --records "${TUNE_RECORDS:-${RECORDS_DIR:-.}/output_gpt-4o_comp.jsonl}" \
      ${TUNE_VERDICTS:+--verdicts "$TUNE_VERDICTS"} --shard "$k/$N" --json "$OUT/tune/published-$k.json" \
      --limit-s "$left"
  fi
  local tasks
  tasks=$(python - "$k" "$N" "${ROCM_TASKS:-}" <<'PY'
import sys
sys.path.insert(0, "bench")
from tune_rocm_recovery import DEFAULT_TASKS
k, n, given = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
names = [t for t in given.split(",") if t] or list(DEFAULT_TASKS)
print(",".join(names[k::n]))
PY
)
  left=$(( ${ROCM_LIMIT:-400} - ($(date +%s) - T0) ))
  if [ -n "$tasks" ] && [ "$left" -gt 20 ]; then
    python bench/tune_rocm_recovery.py --tasks "$tasks" --json "$OUT/tune/rocm-recovery-$k.json" --limit-s "$left"
  fi
}

kbx_lane() {  # K: the K-th share of the KernelBench-X tasks
  local k=$1 left
  left=$(( ${KBX_LIMIT:-540} - ($(date +%s) - T0) ))
  [ "$left" -gt 10 ] && python bench/kernelbenchx_references.py --data "${KBX_DATA:?set KBX_DATA}" \
    --shard "$k/$N" --host-memory-gb "$KBX_HOST_GB" --json "$OUT/kbx/kbx-references-$k.json" --limit-s "$left"
}

for part in "$@"; do
  case "$part" in
    throughput)
      OUT=$OUT/throughput RECORDS="$SIX" WARM_S=${WARM_S:-180} PER_GPU=${PER_GPU:-80} \
        EXECUTORS=${EXECUTORS:-local} CALL_S=${CALL_S:-560} bash bench/eval_throughput.sh \
        > "$OUT/throughput.log" 2>&1
      tail -8 "$OUT/throughput/throughput.txt" ;;
    tune)
      mkdir -p "$OUT/tune"
      k=0
      for gpu in $GPUS; do lane "$gpu" "tune$k" tune_lane "$k" & k=$((k + 1)); done
      wait
      tail -n 3 "$OUT"/lane-tune*.log ;;
    tests)
      set -- $GPUS
      lane "$1" gpu-tests timeout 300 python -m pytest -q tests/evaluator/test_gpu.py tests/evaluator/test_eager.py \
        tests/agent/test_geak_modules.py -p no:cacheprovider &
      lane "${2:-$1}" quickstart-tuned timeout 230 geak-core run recipes/quickstart-tuned.toml &
      wait
      tail -n 3 "$OUT"/lane-gpu-tests.log "$OUT"/lane-quickstart-tuned.log ;;
    kbx)
      mkdir -p "$OUT/kbx"
      KBX_HOST_GB=$(awk -v n="$N" '/MemTotal/ {printf "%d", $2 / 1e6 * 0.6 / n}' /proc/meminfo)
      k=0
      for gpu in $GPUS; do lane "$gpu" "kbx$k" kbx_lane "$k" & k=$((k + 1)); done
      wait
      python bench/kernelbenchx_references.py --table "$(ls "$OUT"/kbx/kbx-references-*.json | paste -sd,)" \
        > "$OUT/kbx/table.md" 2>&1
      tail -n 25 "$OUT/kbx/table.md" ;;
    *) echo "unknown part $part (throughput, tune, tests, kbx)"; exit 2 ;;
  esac
done
echo "done in $(( $(date +%s) - T0 )) s"
