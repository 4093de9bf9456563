#!/usr/bin/env bash
# One device session: install, GPU tests, then judge suite references on the GPU.
#   bash bench/gpu_session.sh PART      PART = tests | refs1 | refs2 | repeat | quickstart
# Results go under $OUT (default ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset TRITON_INTERPRET
bash install.sh --no-deps > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
TASKS1=test_add_kernel,softmax,naive_softmax,layernorm,rmsnorm_fwd,rmsnorm_bwd,test_load_reduce,test_reverse_range,test_kernel_sub,test_kernel_dot,test_triton_flip,test_triton_sort,test_triton_swizzle2d,test_randn,test_random_int,test_block_copy
TASKS2=test_batched_vecmat,test_block_pointer_matmul,test_cast_matmul,test_chained_matmul,test_gemm_fusion,test_gemm_no_scf,test_iv_dependent_matmul,test_tma_store_gemm,multreduce_matmul_dot_kernel,triton_multreduce_matmul_kernel,test_flashattention_fwd,test_matmul_MXFP,test_chained_dot_fp8,moe_gemm,gemm
for part in "$@"; do
  case "$part" in
    tests) timeout ${TLIMIT:-150} python -m pytest -q tests/evaluator/test_gpu.py > "$OUT/gpu-tests.log" 2>&1; tail -15 "$OUT/gpu-tests.log" ;;
    refs1) timeout ${LIMIT:-500} python bench/evaluator.py --tasks "${T1:-$TASKS1}" --repeats 0 --json "$OUT/refs1.json" > "$OUT/refs1.md" 2> "$OUT/refs1.log"; tail -25 "$OUT/refs1.log" ;;
    refs2) timeout ${LIMIT:-500} python bench/evaluator.py --tasks "${T2:-$TASKS2}" --repeats 0 --json "$OUT/refs2.json" > "$OUT/refs2.md" 2> "$OUT/refs2.log"; tail -25 "$OUT/refs2.log" ;;
    repeat) timeout ${RLIMIT:-300} python bench/evaluator.py --tasks "${REPEAT_TASKS:-test_add_kernel,softmax,layernorm,test_gemm_fusion}" --repeats 5 --json "$OUT/repeat.json" > "$OUT/repeat.md" 2> "$OUT/repeat.log"; cat "$OUT/repeat.md" ;;
    quickstart) timeout ${QLIMIT:-200} geak-core run recipes/quickstart.toml --output-dir /tmp/geak-runs --json "$OUT/quickstart.json" > "$OUT/quickstart.log" 2>&1; tail -22 "$OUT/quickstart.log" ;;
  esac
done
