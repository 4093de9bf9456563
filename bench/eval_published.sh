#!/usr/bin/env bash
# `geak-core eval` over published TritonBench-G output files, with default options (EVAL_ARGS
# adds some, e.g. "--speedup-method sum" for GEAK-eval's summed speedup), one after the other on one
# machine (each file finds the caches the earlier ones left), as a user runs it: a timeline of
# the verdict count each second it changes, GPU utilisation sampled each second, and the
# process tree plus every judge thread's stack (kill -USR1) whenever 45 s pass without a verdict.
#
#   GEAK_TRITONBENCH_DATA=.../TritonBench/data RECORDS=.../Bench_G_general_purpose \
#   FILES="output_gpt-4o_comp.jsonl ..." bash bench/eval_published.sh
#
# HARD: seconds a file may take (default 540); CALL_S: seconds for the whole script (default
# 585; a file gets what is left); GPU_TESTS=1 runs tests/evaluator/test_gpu.py first;
# SKIP_INSTALL=1 leaves out `install.sh --no-deps` (several lanes on one machine, one per GPU).
# Per file under $OUT/<file>/: verdicts.jsonl (eval's --json), eval.log, eval.err, timeline.txt,
# smi.csv, ps.txt (stalls only).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if [ -z "${SKIP_INSTALL:-}" ]; then
  bash install.sh --no-deps > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
  echo "install $(( $(date +%s) - T0 )) s"
fi
if [ -n "${GPU_TESTS:-}" ]; then
  timeout 150 python -m pytest -q tests/evaluator/test_gpu.py -p no:cacheprovider > "$OUT/gpu-tests.log" 2>&1
  tail -3 "$OUT/gpu-tests.log"
fi
for F in ${FILES:-output_gpt-4o_comp.jsonl}; do
  O=$OUT/${F%.jsonl}; mkdir -p "$O"
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 1000 ${CUDA_VISIBLE_DEVICES:+-i $CUDA_VISIBLE_DEVICES} > "$O/smi.csv" 2>/dev/null &
  SMI=$!
  START=$(date +%s)
  LIMIT=${HARD:-540}
  LEFT=$(( ${CALL_S:-585} - ($(date +%s) - T0) ))
  [ $LEFT -lt $LIMIT ] && LIMIT=$LEFT
  [ $LIMIT -lt 30 ] && { echo "no time left for $F"; kill $SMI; break; }
  geak-core eval --suite tritonbench ${EVAL_ARGS:-} --candidates "$RECORDS/$F" -o "$O/verdicts.jsonl" > "$O/eval.log" 2> "$O/eval.err" &
  PID=$!
  last_n=0; last_t=0; dumped=0
  while kill -0 $PID 2>/dev/null; do
    sleep 1
    now=$(( $(date +%s) - START ))
    n=$( (grep -c . "$O/verdicts.jsonl" 2>/dev/null) || echo 0)
    if [ "$n" != "$last_n" ]; then echo "$now $n" >> "$O/timeline.txt"; last_n=$n; last_t=$now; dumped=0; fi
    if [ $(( now - last_t )) -ge 45 ] && [ $dumped = 0 ]; then
      dumped=1
      echo "== stall at $now s ($n verdicts)" >> "$O/ps.txt"
      ps -eo pid,ppid,pgid,etimes,stat,pcpu,rss,args --forest | grep -v "ps -eo" | cut -c1-300 >> "$O/ps.txt"
      kill -USR1 $PID
    fi
    if [ $now -ge $LIMIT ]; then echo "stopped at $now s"; kill -INT $PID; sleep 6; kill -9 $PID 2>/dev/null; break; fi
  done
  wait $PID 2>/dev/null; echo "== $F rc=$? wall=$(( $(date +%s) - START )) s verdicts=$(grep -c . "$O/verdicts.jsonl")"
  kill $SMI
  grep -A3 "^candidates\|call accuracy" "$O/eval.log" | head -8 | cut -c1-220
  awk 'BEGIN{p=0;m=0} {if ($1-p>m) {m=$1-p; at=p}; p=$1} END {print "longest gap between verdicts", m, "s (after", at, "s); last verdict at", p, "s"}' "$O/timeline.txt"
  awk -F', ' '{gsub(" %","",$2); n++; s+=$2; if ($2>0) b++} END {print "GPU samples", n, "mean utilisation", s/n, "busy share", b/n}' "$O/smi.csv"
done
