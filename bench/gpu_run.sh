#!/usr/bin/env bash
# One GPU machine run: install, GPU tests, then judge suite references on the GPU.
#   bash bench/gpu_run.sh PART...
#   PART = tests | refs1 | refs2 | refs3 | quickstart | profile | exit | originals | profiled-run
# profile: bench/profile_agreement.py over the ROCm references with $PROFILER (default ncu),
# under $PLIMIT seconds; exit: bench/exit_status.py, `geak-core eval` of the ROCm references
# $EXIT_RUNS times (default 20); originals: bench/rocm_originals.py of $ORIGINALS (default
# gemm and multreduce_matmul_dot_kernel, whose autotuners tune at every new shape);
# profiled-run: recipes/quickstart.toml with [profiler] name = $PROFILER.
# refsN judges task list N (or $T1/$T2/$T3) with $RN (else $REPEATS, default 5) speedups
# per task (the cold judgement included), each part under $LIMIT seconds, and writes
# refsN.json after every task. Results go under $OUT (default ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset TRITON_INTERPRET
bash install.sh --no-deps > /tmp/install.log 2>&1 || { cp /tmp/install.log "$OUT/"; tail -20 /tmp/install.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
TASKS1=test_add_kernel,test_load_reduce,test_reverse_range,test_kernel_sub,test_kernel_dot,test_triton_flip,test_triton_sort,test_triton_swizzle2d,test_randn,test_random_int,test_block_copy,test_gemm_fusion,test_gemm_no_scf,test_iv_dependent_matmul,test_tma_store_gemm
TASKS2=softmax,naive_softmax,layernorm,rmsnorm_fwd,rmsnorm_bwd,test_batched_vecmat,test_block_pointer_matmul,test_cast_matmul
TASKS3=test_chained_matmul,multreduce_matmul_dot_kernel,triton_multreduce_matmul_kernel,test_flashattention_fwd,test_matmul_MXFP,test_chained_dot_fp8,moe_gemm,gemm
refs() {  # refs NAME TASKS REPEATS
  timeout ${LIMIT:-500} python bench/evaluator.py --tasks "$2" --repeats "$3" --json "$OUT/$1.json" > "$OUT/$1.md" 2> "$OUT/$1.log"
  tail -20 "$OUT/$1.log"
}
for part in "$@"; do
  case "$part" in
    tests) timeout ${TLIMIT:-150} python -m pytest -q tests/evaluator/test_gpu.py > "$OUT/gpu-tests.log" 2>&1; tail -15 "$OUT/gpu-tests.log" ;;
    refs1) refs refs1 "${T1:-$TASKS1}" "${R1:-${REPEATS:-5}}" ;;
    refs2) refs refs2 "${T2:-$TASKS2}" "${R2:-${REPEATS:-5}}" ;;
    refs3) refs refs3 "${T3:-$TASKS3}" "${R3:-${REPEATS:-5}}" ;;
    profile) timeout ${PLIMIT:-400} python bench/profile_agreement.py --suite rocm --profiler "${PROFILER:-ncu}" \
               --references --json "$OUT/profile-rocm.json" > "$OUT/profile-rocm.log" 2>&1
             python bench/profile_agreement.py --table "$OUT/profile-rocm.json" | tail -8 ;;
    exit) python -c "import shutil, os; from geak_core.engine.plugins import PluginManager as P
os.makedirs('/tmp/geak-exit', exist_ok=True)
[shutil.copy(t.reference, f'/tmp/geak-exit/{t.id}.py') for t in P().build('suite', 'rocm', None).tasks() if t.reference]"
          timeout ${XLIMIT:-500} python bench/exit_status.py /tmp/geak-exit --suite rocm --runs "${EXIT_RUNS:-20}" \
            --json "$OUT/exit-status.json" > "$OUT/exit-status.log" 2>&1; tail -8 "$OUT/exit-status.log" ;;
    originals) timeout ${OLIMIT:-500} python bench/rocm_originals.py --tasks "${ORIGINALS:-gemm,multreduce_matmul_dot_kernel}" \
                 --json "$OUT/originals.json" > "$OUT/originals.log" 2>&1; tail -12 "$OUT/originals.log" ;;
    profiled-run) timeout ${QLIMIT:-300} geak-core run recipes/quickstart.toml --set "profiler.name=\"${PROFILER:-ncu}\"" \
                    --output-dir /tmp/geak-runs -o "$OUT/profiled-run.json" > "$OUT/profiled-run.log" 2>&1
                  tail -22 "$OUT/profiled-run.log"; geak-core runs log --output-dir /tmp/geak-runs "$(ls -t /tmp/geak-runs | head -1)" \
                    2>&1 | grep -i -A4 profil | head -60 > "$OUT/profiled-run-log.txt" ;;
    quickstart) timeout ${QLIMIT:-200} geak-core run recipes/quickstart.toml --output-dir /tmp/geak-runs -o "$OUT/quickstart.json" > "$OUT/quickstart.log" 2>&1; tail -22 "$OUT/quickstart.log" ;;
  esac
done
