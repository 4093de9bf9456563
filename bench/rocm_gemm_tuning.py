"""rocm/gemm on a GPU: the tiles the original's autotuner picks, and our reference's speed beside it.

For each timed case of the rocm suite's gemm task (float32 last: the original's
autotuning compiles its 256 x 256 float32 tiles, which takes minutes), through
the task's harness and on the same inputs:

* the first call of our reference and of the ported original (GEAK-eval's
  ROCm_v1 gemm.py, read through the suite's ``baseline`` option), each of which
  autotunes; the configs their autotuners chose;
* both sides' outputs of that first call against the harness's oracle, and ours
  against the original's, with the task's tolerances (as the judge compares);
* ``triton.testing.do_bench`` of both, ``--repeats`` times each, alternating;
* with ``--each-config``, our kernel launched directly with each of the
  original's configs.

original/ours is our summed time over the original's (best of the repeats per
case). Results go to ``--json`` after every case (a call cut short keeps them).

    python bench/rocm_gemm_tuning.py --rocm-v1 .ext/GEAK-eval/geak_eval/data/ROCm/data/ROCm_v1 --json gemm.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocm-v1", required=True, help="GEAK-eval's geak_eval/data/ROCm/data/ROCm_v1 folder")
    parser.add_argument("--json", dest="json_out", default="")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--each-config", action="store_true",
                        help="also time our kernel with each of the original's configs")
    return parser.parse_args(argv)


def _chosen(kernel: Any) -> dict[str, Any]:
    best = kernel.best_config
    meta = {k: v for k, v in best.kwargs.items() if k.startswith(("BLOCK", "GROUP"))}
    return {**meta, "num_warps": best.num_warps, "num_stages": best.num_stages}


def _launch_with(module: Any, case: Any, inputs: dict[str, Any], outputs: dict[str, Any],
                 config: dict[str, Any]) -> None:
    """Our kernel (the function under the autotuner) with one config, scales and activation off."""
    from geak_core.api.harness import cdiv

    p = case.params
    a, b, c = inputs["a"], inputs["b"], outputs["c"]
    m, n, k = p["M"], p["N"], p["K"]
    bm, bn, bk = config["BLOCK_SIZE_M"], config["BLOCK_SIZE_N"], config["BLOCK_SIZE_K"]
    kernel = module.matmul_kernel
    while type(kernel).__name__ in ("Autotuner", "Heuristics"):  # down to the jitted function
        kernel = kernel.fn
    kernel[(cdiv(m, bm) * cdiv(n, bn),)](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        None, None, 0, 0, 0, 0, GROUP_K=128, GROUP_N=128, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
        EVEN_K=k % bk == 0, GROUP_SIZE_M=config["GROUP_SIZE_M"], APPLY_SCALE=None, ACTIVATION="",
        GRID_MN=cdiv(m, bm) * cdiv(n, bn), num_warps=config["num_warps"], num_stages=config["num_stages"])


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    import torch
    import triton
    from geak_core.engine.store import atomic_write
    from geak_evaluator_triton.child_jobs import import_file, load_harness
    from rocm_probe import side_by_side, task_and_original  # beside this script

    if not torch.cuda.is_available():
        print("error: this bench needs a GPU", file=sys.stderr)
        return 2
    ours_task, described = task_and_original("gemm", args.rocm_v1)
    if described["problem"]:
        print(f"error: {described['problem']}", file=sys.stderr)
        return 2
    original = import_file("ported_gemm", described["module"])
    ours = import_file("reference_gemm", ours_task.reference)
    harness = load_harness(ours_task)
    cases = sorted((c for c in harness.cases("full") if c.timed), key=lambda c: c.params["a"] == "float32")
    configs = [{**{k: v for k, v in c.kwargs.items() if k.startswith(("BLOCK", "GROUP"))},
                "num_warps": c.num_warps, "num_stages": c.num_stages} for c in original.matmul_kernel.configs]
    data: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                            "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"), "cases": []}
    for case in cases:
        row: dict[str, Any] = {"case": case.name}
        sides = (("ours", ours), ("original", original))
        side_by_side(ours_task, harness, case, sides, args.repeats, row,
                     on_first_call=lambda name, module, row=row: row.update(
                         {f"{name}_config": _chosen(module.matmul_kernel)}))
        row["original_over_ours"] = min(row["ours_ms"]) / min(row["original_ms"])
        if args.each_config:
            inputs = harness.make_inputs(case, 0, "cuda")
            row["ours_by_config_ms"] = []
            for config in configs:
                try:
                    ms: Any = triton.testing.do_bench(
                        lambda config=config, case=case, inputs=inputs: _launch_with(
                            ours, case, inputs, harness.allocate(case, inputs), config))
                except Exception as exc:  # too much shared memory, say
                    ms = f"{type(exc).__name__}: {str(exc)[:120]}"
                row["ours_by_config_ms"].append([config, ms])
        data["cases"].append(row)
        ours_sum = sum(min(r["ours_ms"]) for r in data["cases"])
        original_sum = sum(min(r["original_ms"]) for r in data["cases"])
        data["original_over_ours"] = ours_sum / original_sum
        print(f"{case.name}: ours {row['ours_config']} {min(row['ours_ms']):.4f} ms, original "
              f"{row['original_config']} {min(row['original_ms']):.4f} ms; vs oracle: ours "
              f"{row['ours_vs_oracle']}, original {row['original_vs_oracle']}; ours vs original "
              f"{row['ours_vs_original']}", file=sys.stderr, flush=True)
        if args.json_out:
            atomic_write(args.json_out, json.dumps(data, indent=1, default=str) + "\n")
    print(f"original/ours over {len(data['cases'])} timed cases: {data.get('original_over_ours', float('nan')):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
