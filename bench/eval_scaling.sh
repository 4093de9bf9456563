#!/usr/bin/env bash
# `geak-core eval` of one published TritonBench-G file on one GPU and on several of one host:
# a cold pass on every GPU (filling the compile and reference caches), then warm passes on one
# GPU, on all of them and, with time left, on two. Per pass: the verdict count each second it
# changes, and each second the judge process's own CPU (% of one core), its threads, the host's
# busy share, load and process count; with SPY=1 and py-spy installed, py-spy of the judge
# process during the all-GPU warm pass (the threads holding the GIL, 60 s).
#
#   GEAK_TRITONBENCH_DATA=.../TritonBench/data RECORDS=.../file.jsonl bash bench/eval_scaling.sh
#
# GPUS: the devices for the all-GPU passes (default: every visible one, e.g. 0,1,2,3); CALL_S:
# seconds for the whole script (default 560); COLD_S, WARM1_S, WARM_S: each pass's limit.
# GEAK-eval's summed speedup (--speedup-method sum), as the earlier figures in docs/benchmarks.md.
# Under $OUT/<pass>/: verdicts.jsonl, eval.log, eval.err, timeline.txt, host.txt (columns: seconds
# since start, judge CPU %, judge threads, host busy %, load, processes).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
bash install.sh --no-deps > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
echo "install $(( $(date +%s) - T0 )) s"
GPUS=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)}
TCK=$(getconf CLK_TCK)
sample() {  # pid, file
  local P=$1 F=$2 prev=0 pt=0 pi=0
  while kill -0 "$P" 2>/dev/null; do
    read -r _ u n s i _ < /proc/stat; tt=$((u + n + s + i)); bz=$((u + n + s))
    st=($(cut -d' ' -f14,15,20 "/proc/$P/stat" 2>/dev/null)); cur=$(( ${st[0]:-0} + ${st[1]:-0} ))
    echo "$(( $(date +%s) - T0 )) $(( (cur - prev) * 100 / TCK )) ${st[2]:-0} $(( pt > 0 ? (bz - pi) * 100 / (tt - pt) : 0 )) $(cut -d' ' -f1 /proc/loadavg) $(ls /proc | grep -c '^[0-9]')" >> "$F"
    prev=$cur; pt=$tt; pi=$bz; sleep 1
  done
}
pass_() {  # label, CUDA_VISIBLE_DEVICES, limit, py-spy (0/1)
  local O=$OUT/$1; mkdir -p "$O"
  local START=$(date +%s) last=0 JP=""
  CUDA_VISIBLE_DEVICES=$2 timeout -s INT "$3" geak-core eval --suite tritonbench --speedup-method sum \
    --candidates "$RECORDS" -o "$O/verdicts.jsonl" > "$O/eval.log" 2> "$O/eval.err" &
  local TP=$!
  for _ in $(seq 50); do JP=$(pgrep -P $TP | head -1); [ -n "$JP" ] && break; sleep 0.1; done
  [ -n "$JP" ] && sample "$JP" "$O/host.txt" &
  if [ "$4" = 1 ] && [ -n "${SPY:-}" ] && command -v py-spy > /dev/null; then
    (sleep 8; timeout 70 py-spy record --pid "$JP" --gil --duration 60 --rate 40 --format raw -o "$O/spy-gil.txt" > "$O/spy.log" 2>&1) &
  fi
  while kill -0 $TP 2>/dev/null; do
    sleep 1; n=$( (grep -c . "$O/verdicts.jsonl" 2>/dev/null) || echo 0)
    [ "$n" != "$last" ] && { echo "$(( $(date +%s) - START )) $n" >> "$O/timeline.txt"; last=$n; }
  done
  wait $TP; echo "== $1 gpus=$2 rc=$? wall=$(( $(date +%s) - START )) s verdicts=$(grep -c . "$O/verdicts.jsonl") last=$(tail -1 "$O/timeline.txt")"
}
pass_ cold-all "$GPUS" "${COLD_S:-230}" 0
pass_ warm-1 "${GPUS%%,*}" "${WARM1_S:-200}" 0
pass_ warm-all "$GPUS" "${WARM_S:-130}" 1
LEFT=$(( ${CALL_S:-560} - ($(date +%s) - T0) ))
TWO=$(echo "$GPUS" | cut -d, -f1,2)
[ "$TWO" != "$GPUS" ] && [ $LEFT -gt 60 ] && pass_ warm-2 "$TWO" $LEFT 0
sleep 2; kill $(jobs -p) 2>/dev/null
exit 0
