#!/usr/bin/env bash
# Verdicts a minute of `geak-core eval` on 1, 2, ... GPUs of one host, locally and through the
# Ray executor (one judge per GPU): how the judge's throughput scales with the GPUs.
#
#   GEAK_TRITONBENCH_DATA=.../TritonBench/data RECORDS="a.jsonl b.jsonl ..." bash bench/eval_throughput.sh
#
# RECORDS: published output files, joined into one pool of records (the six TritonBench-G files:
# 1,104 records), put in one random order (SEED, default 0), the same for every pass.
#
# MODE=weak (the default): the same work per GPU. The pass on N GPUs judges the first N x
# PER_GPU records of that order (default 80) to the end (PASS_S, default 240 s, at most);
# the rate is its judged verdicts over the seconds from its start to its last verdict, start-up
# included, and the ratio is that rate over N times one GPU's. Every pass then judges a
# random sample of the same records, in the judge's own order (the costliest first), with as
# much work a GPU and the same start-up, so one GPU is not measured on the costliest records
# alone while several GPUs reach cheaper ones (what a fixed window over a large pool does: the
# judge starts the costliest first, so one GPU's window holds more costly verdicts). A warm-up
# pass first judges the largest pass's records on every GPU (WARM_S seconds at most, default 0:
# the compile and reference caches as they are), so that no pass pays for compiling.
#
# MODE=window: each pass judges the whole pool for WINDOW seconds (default 120) from its start;
# the rate is what it judged within the window (biased as said above; kept to compare with the
# figures measured that way).
#
# COUNTS: GPU counts to measure (default "1 2 4", those above the host's GPUs left out).
# EXECUTORS: "local ray" (ray only where `import ray` works; "one-process" also: the local
# executor with one judge for all the GPUs, `judges = 1`; a private one-machine Ray cluster per
# pass, address = "local"). CALL_S: seconds for the whole script (default 560): passes that would
# end after it are not started.
# Per pass under $OUT/<executor>-<N>/: records.jsonl (weak), verdicts.jsonl, eval.log, eval.err,
# timeline.txt (seconds since the pass's start, verdicts written); one line per pass in
# $OUT/throughput.txt. Records decided without a judge (no code, an unusable task) are not
# counted: each pass writes them at its start.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
T0=$(date +%s)
MODE=${MODE:-weak}
WINDOW=${WINDOW:-120}
PER_GPU=${PER_GPU:-80}
PASS_S=${PASS_S:-240}
CALL_S=${CALL_S:-560}
ALL=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
HAVE=$(echo "$ALL" | tr ',' '\n' | grep -c .)
POOL=$OUT/records.jsonl
# shellcheck disable=SC2086
python - "$POOL" "${SEED:-0}" $RECORDS <<'PY'
import random, sys
out, seed, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lines = [line for f in files for line in open(f, encoding="utf-8") if line.strip()]
random.Random(seed).shuffle(lines)
with open(out, "w", encoding="utf-8") as handle:
    handle.writelines(line if line.endswith("\n") else line + "\n" for line in lines)
PY
echo "$(grep -c . "$POOL") records in one random order (seed ${SEED:-0}); GPUs $ALL; mode $MODE" \
  "($([ "$MODE" = weak ] && echo "$PER_GPU records a GPU, $PASS_S s at most a pass" || echo "window $WINDOW s"))" \
  | tee "$OUT/throughput.txt"
MAXN=1
for N in ${COUNTS:-1 2 4}; do [ "$N" -le "$HAVE" ] && [ "$N" -gt "$MAXN" ] && MAXN=$N; done

judged() {  # verdicts file, seconds: verdicts written within the seconds that needed the judge
  python - "$1" "$2" "$(dirname "$1")/timeline.txt" <<'PY'
import json, sys
path, within, timeline = sys.argv[1], float(sys.argv[2]), sys.argv[3]
written = 0
for line in open(timeline, encoding="utf-8"):
    seconds, count = line.split()
    if float(seconds) <= within:
        written = int(count)
without = 0
for k, line in enumerate(open(path, encoding="utf-8")):
    if k >= written:
        break
    verdict = json.loads(line)
    without += verdict.get("failed_stage") == "extract" or "skipped" in (verdict.get("flags") or [])
print(written - without)
PY
}

pass_() {  # label, executor, gpus (comma list), seconds at most, records file
  local O=$OUT/$1 START last=0 extra=()
  mkdir -p "$O"
  local N
  N=$(echo "$3" | tr ',' '\n' | grep -c .)
  [ "$2" = ray ] && extra=(--executor ray --executor-option 'address="local"' --executor-option "judges=$N")
  [ "$2" = one-process ] && extra=(--executor-option "judges=1")
  START=$(date +%s)
  CUDA_VISIBLE_DEVICES=$3 geak-core eval --suite tritonbench "${extra[@]}" --candidates "$5" \
    -o "$O/verdicts.jsonl" > "$O/eval.log" 2> "$O/eval.err" &
  local P=$!
  : > "$O/timeline.txt"
  while kill -0 $P 2>/dev/null; do
    sleep 1
    local now=$(( $(date +%s) - START ))
    local n
    n=$( (grep -c . "$O/verdicts.jsonl" 2>/dev/null) || echo 0)
    [ "$n" != "$last" ] && { echo "$now $n" >> "$O/timeline.txt"; last=$n; }
    if [ $now -ge "$4" ]; then
      kill -INT $P 2>/dev/null
      for _ in $(seq 20); do kill -0 $P 2>/dev/null || break; sleep 1; done
      kill -9 $P 2>/dev/null
      break
    fi
  done
  wait $P 2>/dev/null
  n=$( (grep -c . "$O/verdicts.jsonl" 2>/dev/null) || echo 0)
  [ "$n" != "$last" ] && echo "$(( $(date +%s) - START )) $n" >> "$O/timeline.txt"
}

if [ "$MODE" = weak ]; then
  head -n $(( MAXN * PER_GPU )) "$POOL" > "$OUT/warm-records.jsonl"
  if [ "${WARM_S:-0}" -gt 0 ]; then
    pass_ warm-up local "$ALL" "$WARM_S" "$OUT/warm-records.jsonl"
    echo "warm-up on $ALL: $(judged "$OUT/warm-up/verdicts.jsonl" 1e9) of the first $(( MAXN * PER_GPU ))" \
      "records judged in $(tail -1 "$OUT/warm-up/timeline.txt" | cut -d' ' -f1) s" | tee -a "$OUT/throughput.txt"
  fi
fi

for EXECUTOR in ${EXECUTORS:-local ray}; do
  if [ "$EXECUTOR" = ray ] && ! python -c "import ray" 2>/dev/null; then
    echo "ray: not importable here, not measured" | tee -a "$OUT/throughput.txt"; continue
  fi
  ONE=""
  for N in ${COUNTS:-1 2 4}; do
    [ "$N" -gt "$HAVE" ] && continue
    LIMIT=$([ "$MODE" = weak ] && echo "$PASS_S" || echo "$WINDOW")
    if [ $(( $(date +%s) - T0 + LIMIT + 25 )) -gt "$CALL_S" ]; then
      echo "$EXECUTOR $N: not started (the script's $CALL_S s)" | tee -a "$OUT/throughput.txt"; continue
    fi
    GPUS=$(echo "$ALL" | cut -d, -f1-"$N")
    O=$OUT/$EXECUTOR-$N
    mkdir -p "$O"
    if [ "$MODE" = weak ]; then
      head -n $(( N * PER_GPU )) "$POOL" > "$O/records.jsonl"
      pass_ "$EXECUTOR-$N" "$EXECUTOR" "$GPUS" "$LIMIT" "$O/records.jsonl"
      SECONDS_=$(tail -1 "$O/timeline.txt" | cut -d' ' -f1)
      n=$(judged "$O/verdicts.jsonl" 1e9)
      total=$(( N * PER_GPU ))
      written=$(tail -1 "$O/timeline.txt" | cut -d' ' -f2)
      how="$written of $total records written, $n judged, the last after $SECONDS_ s"
    else
      pass_ "$EXECUTOR-$N" "$EXECUTOR" "$GPUS" "$LIMIT" "$POOL"
      SECONDS_=$WINDOW
      n=$(judged "$O/verdicts.jsonl" "$WINDOW")
      how="$n verdicts judged in $WINDOW s"
    fi
    rate=$(awk -v n="$n" -v s="${SECONDS_:-0}" 'BEGIN {printf "%.1f", (s > 0 ? n * 60 / s : 0)}')
    [ "$N" = 1 ] && ONE=$rate
    ratio=$(awk -v r="$rate" -v one="${ONE:-0}" -v k="$N" 'BEGIN {if (one > 0) printf "%.2f", r / one / k; else print "-"}')
    echo "$EXECUTOR $N GPU(s): $how, $rate a minute, $ratio x N of one GPU" | tee -a "$OUT/throughput.txt"
  done
done
