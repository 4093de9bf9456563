"""Does a call's time depend on its input values? The same call on inputs drawn from several seeds.

The judge times the baseline and the candidate on inputs of the same shapes; until
2026-11-27 on different seeds (the baseline on the task's first seed, the candidate on
the secret timing seed). For an operation whose work depends on the values (an
eigensolver's iterations, a selection's output size) different seeds time different
work. This bench draws ``torch.rand(n, n)`` on ``--seeds`` seeds, calls the operation on
each in turn, round after round (interleaved, so drift reaches every seed alike), and
prints each seed's median time, the medians of the first and second halves of the rounds
(how well each median is known) and the spread of the medians across seeds.

    python bench/input_dependence.py --op eig --sizes 64,128,256 --seeds 5 --rounds 30

On the CPU the operation runs on one thread (``--threads``); ``--device cuda`` times it
on the GPU with a synchronisation after each call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any


def operations() -> dict[str, Any]:
    import torch

    return {
        "eig": torch.linalg.eig,
        "eigh": lambda a: torch.linalg.eigh(a + a.mT),
        "svd": torch.linalg.svd,
        "masked_select": lambda a: torch.masked_select(a, a > 0.5),
        "matmul": lambda a: a @ a,
    }


def measure(op: Any, inputs: list[Any], rounds: int, sync: Any) -> list[list[float]]:
    """Seconds per call, per input, the inputs called in turn round after round."""
    times: list[list[float]] = [[] for _ in inputs]
    for tensor in inputs:  # one call each first: lazy set-up out of the timings
        op(tensor)
    sync()
    for _ in range(rounds):
        for index, tensor in enumerate(inputs):
            began = time.perf_counter()
            op(tensor)
            sync()
            times[index].append(time.perf_counter() - began)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--op", default="eig", choices=sorted(operations()))
    parser.add_argument("--sizes", default="64,128,256", help="comma-separated n of the n x n inputs")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    op = operations()[args.op]
    found: dict[str, Any] = {"op": args.op, "device": args.device, "threads": args.threads, "sizes": {}}
    for n in [int(x) for x in args.sizes.split(",") if x]:
        inputs = [torch.rand(n, n, generator=torch.Generator().manual_seed(seed)).to(args.device)
                  for seed in range(args.seeds)]
        times = measure(op, inputs, args.rounds, sync)
        half = args.rounds // 2
        medians = [statistics.median(t) * 1e3 for t in times]
        halves = [(statistics.median(t[:half]) * 1e3, statistics.median(t[half:]) * 1e3) for t in times]
        spread = max(medians) / min(medians) - 1
        halves_apart = max(abs(a / b - 1) for a, b in halves)
        found["sizes"][n] = {"medians_ms": medians, "halves_ms": halves, "spread": spread,
                             "halves_apart": halves_apart}
        print(f"{args.op} n={n}: medians (ms) {', '.join(f'{m:.3f}' for m in medians)}; across seeds "
              f"{100 * spread:.1f} %, a seed's two halves at most {100 * halves_apart:.1f} % apart", flush=True)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump(found, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
