"""One rocm task's reference beside the original, in one process, without the judge.

For each timed case of the task, through the task's harness on the same inputs
(seed 0): the first call of our reference and of the ported original
(GEAK-eval's ROCm_v1 file read through the suite's ``baseline`` option), whose
wall seconds are mostly compiling and autotuning; both sides' outputs against
the harness's oracle and ours against the original's, with the task's
tolerances (as the judge compares); then ``triton.testing.do_bench`` of both,
``--repeats`` times each, alternating. original/ours is our summed time over
the original's (best of the repeats per case), as ``rocm_originals.py``
reports it. Both modules are trusted code here (our reference, the user's
copy of the published kernels): a quick check of a reference change that
needs no judge. Results go to ``--json`` after every case.

    python bench/rocm_probe.py --rocm-v1 .ext/GEAK-eval/geak_eval/data/ROCm/data/ROCm_v1 \\
        --tasks test_triton_sort,triton_multreduce_matmul_kernel --json probe.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from typing import Any


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocm-v1", required=True, help="GEAK-eval's geak_eval/data/ROCm/data/ROCm_v1 folder")
    parser.add_argument("--tasks", required=True, help="comma-separated rocm task ids")
    parser.add_argument("--json", dest="json_out", default="")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--reference", default="",
                        help="time this file in place of the task's reference (one task; to try a change)")
    return parser.parse_args(argv)


def side_by_side(task: Any, harness: Any, case: Any, sides: tuple[tuple[str, Any], ...], repeats: int,
                 row: dict[str, Any], on_first_call: Any = None) -> None:
    """Into ``row``: each side's first call (seconds), its outputs against the oracle and
    ours against the original's (``sides`` is (("ours", m), ("original", m))), then
    ``repeats`` alternating ``do_bench`` figures per side (``<side>_ms``), on seed 0's
    inputs. ``on_first_call(name, module)`` may add to ``row`` after a side's first call."""
    import torch
    import triton
    from geak_evaluator_triton.evaluator import cast_like
    from geak_evaluator_triton.run_compare import compare_outputs, overrides_for
    from geak_evaluator_triton.timed_calls import to_host

    inputs = harness.make_inputs(case, 0, "cuda")
    produced = {}
    for name, module in sides:
        began = time.monotonic()
        produced[name] = harness.allocate(case, inputs)
        harness.run(module, case, inputs, produced[name])
        torch.cuda.synchronize()
        row[f"{name}_first_call_s"] = round(time.monotonic() - began, 2)
        if on_first_call is not None:
            on_first_call(name, module)
    oracle = to_host(harness.oracle(case, inputs))
    produced = {name: to_host(outputs) for name, outputs in produced.items()}
    tolerances = overrides_for(task, case)
    for name, outputs in produced.items():
        diffs = compare_outputs(cast_like(oracle, outputs), outputs, tolerances, None)
        row[f"{name}_vs_oracle"] = diffs[0]["message"] if diffs else "ok"
    diffs = compare_outputs(produced["original"], produced["ours"], tolerances, None)
    row["ours_vs_original"] = diffs[0]["message"] if diffs else "ok"
    del produced, oracle
    for _ in range(repeats):
        for name, module in sides:
            row.setdefault(f"{name}_ms", []).append(triton.testing.do_bench(
                lambda module=module: harness.run(module, case, inputs, harness.allocate(case, inputs))))


@functools.cache
def _suites(rocm_v1: str) -> tuple[Any, Any]:
    """Our rocm suite and the same with ``baseline = rocm_v1`` (built once: building one
    reads the whole folder and ports every original)."""
    from geak_core.engine.plugins import get_plugin_manager

    manager = get_plugin_manager()
    spec = manager.spec("suite", "rocm")
    return (manager.build("suite", "rocm", spec.options(baseline="")),
            manager.build("suite", "rocm", spec.options(baseline=rocm_v1)))


def task_and_original(task_id: str, rocm_v1: str) -> tuple[Any, dict[str, Any]]:
    """The task as our suite has it, and its ported original as the ``baseline`` option
    describes it (``module``, ``problem``)."""
    ours, baseline = _suites(os.path.abspath(rocm_v1))
    return ours.get(task_id), baseline.get(task_id).extra["timing_baseline"]


def probe_task(task_id: str, args: argparse.Namespace, data: dict[str, Any], save: Any) -> None:
    from geak_evaluator_triton.child_jobs import import_file, load_harness

    task, described = task_and_original(task_id, args.rocm_v1)
    row: dict[str, Any] = {"task": task_id, "cases": []}
    data["tasks"].append(row)
    if described["problem"]:
        row["problem"] = described["problem"]
        save()
        return
    ours = args.reference or task.reference
    row["reference"] = ours
    sides = (("ours", import_file(f"reference_{task_id}", ours)),
             ("original", import_file(f"original_{task_id}", described["module"])))
    harness = load_harness(task)
    for case in [c for c in harness.cases("full") if c.timed]:
        entry: dict[str, Any] = {"case": case.name}
        side_by_side(task, harness, case, sides, args.repeats, entry)
        row["cases"].append(entry)
        row["original_over_ours"] = (sum(min(c["ours_ms"]) for c in row["cases"])
                                     / sum(min(c["original_ms"]) for c in row["cases"]))
        print(f"{task_id} {case.name}: first call ours {entry['ours_first_call_s']} s, original "
              f"{entry['original_first_call_s']} s; ours {min(entry['ours_ms']):.4f} ms, original "
              f"{min(entry['original_ms']):.4f} ms; vs oracle: ours {entry['ours_vs_oracle']}, original "
              f"{entry['original_vs_oracle']}; ours vs original {entry['ours_vs_original']}",
              file=sys.stderr, flush=True)
        save()
    print(f"{task_id}: original/ours over {len(row['cases'])} timed cases: "
          f"{row.get('original_over_ours', float('nan')):.3f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    import torch
    import triton
    from geak_core.engine.store import atomic_write

    if not torch.cuda.is_available():
        print("error: this bench needs a GPU", file=sys.stderr)
        return 2
    data: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                            "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"), "tasks": []}

    def save() -> None:
        if args.json_out:
            atomic_write(args.json_out, json.dumps(data, indent=1, default=str) + "\n")

    tasks = [t for t in args.tasks.split(",") if t]
    if args.reference and len(tasks) != 1:
        print("error: --reference needs exactly one task", file=sys.stderr)
        return 2
    for task_id in tasks:
        try:
            probe_task(task_id, args, data, save)
        except Exception as exc:  # one task's failure does not end the others
            data["tasks"].append({"task": task_id, "error": f"{type(exc).__name__}: {exc}"})
            save()
            print(f"{task_id}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
