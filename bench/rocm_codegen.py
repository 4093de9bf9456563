"""Whether our reference and the original compile alike, without a GPU.

For each timed case of a rocm task, the harness runs both modules (our
reference and the ported original, read through the suite's ``baseline``
option) with their launches recorded instead of made; each recorded kernel is
then compiled for one GPU target (``--target``, default CUDA sm_90) with the
arguments specialised as Triton's runtime specialises them (tensors by dtype
and 16-byte alignment; integers by value, a 1 becoming a constant, unless the
parameter is annotated with a type; multiples of 16 marked divisible), under
every config of the original's autotuner where the kernel autotunes (our
reference's configs must be the same ones) and the heuristics' values. Per
case and config it prints whether the two TTGIR programs use the same layouts
(the layout definitions, their names aside) and both PTX sizes. Same layouts
are no proof of the same speed, but different layouts explain most gaps
between kernels that do the same work.

    python bench/rocm_codegen.py --rocm-v1 .ext/GEAK-eval/geak_eval/data/ROCm/data/ROCm_v1 \\
        --tasks triton_multreduce_matmul_kernel --json codegen.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
          "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "u1",
          "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocm-v1", required=True, help="GEAK-eval's geak_eval/data/ROCm/data/ROCm_v1 folder")
    parser.add_argument("--tasks", required=True, help="comma-separated rocm task ids")
    parser.add_argument("--target", default="cuda:90:32", help="backend:arch:warp size (cuda:90:32, hip:gfx942:64)")
    parser.add_argument("--json", dest="json_out", default="")
    parser.add_argument("--reference", default="",
                        help="compile this file in place of the task's reference (one task; to try a change)")
    return parser.parse_args(argv)


def _layers(kernel: Any) -> tuple[Any, list[Any], list[Any]]:
    """The JITFunction under ``kernel``, its autotuners' configs and its heuristics wrappers."""
    configs: list[Any] = []
    heuristics: list[Any] = []
    while type(kernel).__name__ in ("Autotuner", "Heuristics"):
        if type(kernel).__name__ == "Autotuner":
            configs = list(kernel.configs)
        else:
            heuristics.append(kernel)
        kernel = kernel.fn
    return kernel, configs, heuristics


def _specialise(fn: Any, values: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], dict[Any, Any]]:
    import torch
    from triton.runtime.jit import native_specialize_impl

    signature: dict[str, str] = {}
    constants: dict[str, Any] = {}
    attrs: dict[Any, Any] = {}
    for index, param in enumerate(fn.params):
        name = param.name
        value = values.get(name, param.default if param.has_default else None)
        if param.is_constexpr or value is None:
            signature[name], constants[name] = "constexpr", value
            continue
        if isinstance(value, torch.Tensor):
            kind, key = "*" + DTYPES[str(value.dtype).removeprefix("torch.")], (
                "D" if value.data_ptr() % 16 == 0 else "")
        else:
            kind, key = native_specialize_impl(None, value, False, True, True)
            if param.annotation_type:  # an annotated parameter keeps its type: no constant
                kind, key = param.annotation_type, key if key in ("D", "") else ""
        if kind == "constexpr":
            signature[name], constants[name] = "constexpr", value
        else:
            signature[name] = kind
            if key == "D":
                attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constants, attrs


def compile_launch(kernel: Any, kwargs: dict[str, Any], config: Any, target: Any) -> tuple[list[str], int]:
    """(layout definitions without their names, PTX or AMDGCN lines) of one launch."""
    import triton
    from geak_core.api.harness import AMD_ONLY_KEYS
    from triton.compiler import ASTSource

    fn, _, heuristics = _layers(kernel)
    values = {k: v for k, v in kwargs.items() if k not in AMD_ONLY_KEYS}
    options = {"num_warps": values.pop("num_warps", 4), "num_stages": values.pop("num_stages", 3)}
    if config is not None:
        values.update({k: v for k, v in config.kwargs.items() if k not in AMD_ONLY_KEYS})
        options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    for wrapper in reversed(heuristics):
        for name, rule in wrapper.values.items():
            values[name] = rule(values)
    signature, constants, attrs = _specialise(fn, values)
    compiled = triton.compile(ASTSource(fn, signature, constants, attrs), target=target, options=options)
    layouts = sorted(re.sub(r"^#\w+ = ", "", line) for line in compiled.asm["ttgir"].splitlines()
                     if re.match(r"#(blocked|linear|shared|mma|nvidia_mma|amd_mfma|dot_op)\w* = ", line))
    code = compiled.asm.get("ptx") or compiled.asm.get("amdgcn") or ""
    return layouts, code.count("\n")


def recorded_launches(harness: Any, module: Any, case: Any) -> list[tuple[Any, dict[str, Any]]]:
    """The kernels ``harness.run`` launches for ``case`` (seed 0, CPU inputs), not launched."""
    calls: list[tuple[Any, dict[str, Any]]] = []
    harness_module = sys.modules[type(harness).__module__]
    real = harness_module.launch
    harness_module.launch = lambda kernel, grid, **kwargs: calls.append((kernel, kwargs))
    try:
        inputs = harness.make_inputs(case, 0, "cpu")
        harness.run(module, case, inputs, harness.allocate(case, inputs))
    finally:
        harness_module.launch = real
    return calls


def compare_task(task_id: str, args: argparse.Namespace, target: Any) -> dict[str, Any]:
    from geak_evaluator_triton.child_jobs import import_file, load_harness
    from rocm_probe import task_and_original  # beside this script

    task, described = task_and_original(task_id, args.rocm_v1)
    if described["problem"]:
        return {"task": task_id, "problem": described["problem"]}
    ours = import_file(f"reference_{task_id}", args.reference or task.reference)
    original = import_file(f"original_{task_id}", described["module"])
    harness = load_harness(task)
    rows = []
    for case in [c for c in harness.cases("full") if c.timed]:
        pairs = zip(recorded_launches(harness, ours, case), recorded_launches(harness, original, case),
                    strict=True)
        for (our_kernel, our_args), (their_kernel, their_args) in pairs:
            their_configs = _layers(their_kernel)[1]
            our_configs = _layers(our_kernel)[1]
            same_configs = [c.all_kwargs() for c in our_configs] == [c.all_kwargs() for c in their_configs]
            for config in their_configs or [None]:
                theirs = compile_launch(their_kernel, their_args, config, target)
                mine = compile_launch(our_kernel, our_args, config if our_configs else None, target)
                row = {"case": case.name, "config": None if config is None else str(config),
                       "same_configs": same_configs, "same_layouts": mine[0] == theirs[0],
                       "ours_lines": mine[1], "original_lines": theirs[1]}
                rows.append(row)
                print(f"{task_id} {case.name} {row['config'] or ''}: layouts "
                      f"{'same' if row['same_layouts'] else 'DIFFERENT'}, lines ours {mine[1]}, original "
                      f"{theirs[1]}", flush=True)
    return {"task": task_id, "cases": rows, "same_layouts": sum(r["same_layouts"] for r in rows),
            "compiled": len(rows)}


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    os.environ.pop("TRITON_INTERPRET", None)
    from geak_core.engine.store import atomic_write
    from triton.backends.compiler import GPUTarget

    backend, arch, warp = args.target.split(":")
    target = GPUTarget(backend, int(arch) if arch.isdigit() else arch, int(warp))
    results = []
    tasks = [t for t in args.tasks.split(",") if t]
    if args.reference and len(tasks) != 1:
        print("error: --reference needs exactly one task", file=sys.stderr)
        return 2
    for task_id in tasks:
        results.append(compare_task(task_id, args, target))
        if args.json_out:
            atomic_write(args.json_out, json.dumps({"target": args.target, "tasks": results}, indent=1) + "\n")
        last = results[-1]
        print(f"{task_id}: {last.get('same_layouts', 0)} of {last.get('compiled', 0)} compiled launches with "
              f"the same layouts" + (f" ({last['problem']})" if last.get("problem") else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
