#!/usr/bin/env bash
# Verdicts a minute of `geak-core eval` on 1, 2, ... GPUs of one host, locally and through the
# Ray executor (one judge per GPU), in a fixed window with more records than the window can
# judge: the judge's throughput, not the time of a file's slowest record (one correct
# candidate of 60-190 s ends every pass over a single published file on several GPUs).
#
#   GEAK_TRITONBENCH_DATA=.../TritonBench/data RECORDS="a.jsonl b.jsonl ..." bash bench/eval_throughput.sh
#
# RECORDS: published output files, joined in order into one candidates file (the six
# TritonBench-G files: 1,104 records). COUNTS: GPU counts to measure (default "1 2 4", those
# above the host's GPUs left out). EXECUTORS: "local ray" (ray only where `import ray` works;
# "one-process" also: the local executor with one judge for all the GPUs, `judges = 1`;
# a private one-machine cluster per pass, address = "local"). WINDOW: seconds counted per pass
# (default 120) from the pass's start, the judge's start-up included. WARM_S: with it, a first
# pass on every GPU for that many seconds fills the compile and reference caches (default 0:
# the caches as they are). CALL_S: seconds for the whole script (default 560): passes that
# would end after it are not started.
# Per pass under $OUT/<executor>-<N>/: verdicts.jsonl, eval.log, eval.err, timeline.txt; one
# line per pass in $OUT/throughput.txt: executor, GPUs, verdicts judged in the window, verdicts
# a minute, and the ratio to the same executor's one-GPU pass over N (the 0.85 target). Records
# decided without a judge (no code, an unusable task) are not counted: each pass writes them
# all at its start, whatever its GPUs, so counting them flattered one GPU against several.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
T0=$(date +%s)
WINDOW=${WINDOW:-120}
CALL_S=${CALL_S:-560}
ALL=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
HAVE=$(echo "$ALL" | tr ',' '\n' | grep -c .)
JOINED=$OUT/records.jsonl
: > "$JOINED"
for F in $RECORDS; do cat "$F" >> "$JOINED"; done
echo "$(grep -c . "$JOINED") records; GPUs $ALL; window $WINDOW s" | tee "$OUT/throughput.txt"

pass_() {  # label, executor, gpus (comma list), seconds
  local O=$OUT/$1 START last=0 extra=()
  mkdir -p "$O"
  local N
  N=$(echo "$3" | tr ',' '\n' | grep -c .)
  [ "$2" = ray ] && extra=(--executor ray --executor-option 'address="local"' --executor-option "judges=$N")
  [ "$2" = one-process ] && extra=(--executor-option "judges=1")
  START=$(date +%s)
  CUDA_VISIBLE_DEVICES=$3 geak-core eval --suite tritonbench "${extra[@]}" --candidates "$JOINED" \
    -o "$O/verdicts.jsonl" > "$O/eval.log" 2> "$O/eval.err" &
  local P=$!
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
  # verdicts whose line was written within the window (the timeline's last count at or before it),
  # less those decided without a judge (no code in the record, a task the suite cannot judge):
  # every pass writes all of those at its start, whatever its GPUs (35 in the six files)
  local n pre
  n=$(awk -v w="$4" '$1 <= w {n = $2} END {print n + 0}' "$O/timeline.txt" 2>/dev/null || echo 0)
  pre=$(python - "$O/verdicts.jsonl" <<'PY'
import json, sys
count = 0
for line in open(sys.argv[1], encoding="utf-8"):
    verdict = json.loads(line)
    count += verdict.get("failed_stage") == "extract" or "skipped" in (verdict.get("flags") or [])
print(count)
PY
)
  echo $(( n - ${pre:-0} ))
}

if [ "${WARM_S:-0}" -gt 0 ]; then
  n=$(pass_ warm-up local "$ALL" "$WARM_S")
  echo "warm-up on $ALL: $n verdicts judged in $WARM_S s" | tee -a "$OUT/throughput.txt"
fi
for EXECUTOR in ${EXECUTORS:-local ray}; do
  if [ "$EXECUTOR" = ray ] && ! python -c "import ray" 2>/dev/null; then
    echo "ray: not importable here, not measured" | tee -a "$OUT/throughput.txt"; continue
  fi
  ONE=""
  for N in ${COUNTS:-1 2 4}; do
    [ "$N" -gt "$HAVE" ] && continue
    if [ $(( $(date +%s) - T0 + WINDOW + 25 )) -gt "$CALL_S" ]; then
      echo "$EXECUTOR $N: not started (the script's $CALL_S s)" | tee -a "$OUT/throughput.txt"; continue
    fi
    GPUS=$(echo "$ALL" | cut -d, -f1-"$N")
    n=$(pass_ "$EXECUTOR-$N" "$EXECUTOR" "$GPUS" "$WINDOW")
    rate=$(awk -v n="$n" -v w="$WINDOW" 'BEGIN {printf "%.1f", n * 60 / w}')
    [ "$N" = 1 ] && ONE=$n
    ratio=$( [ -n "$ONE" ] && [ "$ONE" -gt 0 ] && awk -v n="$n" -v one="$ONE" -v k="$N" \
      'BEGIN {printf "%.2f", n / one / k}' || echo "-")
    echo "$EXECUTOR $N GPU(s): $n verdicts judged in $WINDOW s, $rate a minute, $ratio x N of one GPU" \
      | tee -a "$OUT/throughput.txt"
  done
done
