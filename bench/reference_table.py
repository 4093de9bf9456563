"""Markdown table of suite references judged on a GPU, from bench/evaluator.py JSON files.

    python bench/reference_table.py out1.json out2.json ...

Later files win for a task judged twice. Per task: verdict, judgement cost (cold, its
reference phase, a new candidate, warm
with evaluations per minute through the pool), speedup of the reference against itself
(median and range over the repeats), and at the largest timed shape its latency,
achieved throughput and fraction of the hardware peak.
"""

from __future__ import annotations

import json
import sys


def largest(shapes: list[dict]) -> dict | None:
    timed = [s for s in shapes if s.get("reference_ms")]
    if not timed:
        return None
    return max(timed, key=lambda s: (s.get("bytes") or 0) + (s.get("flops") or 0) / 100.0)


def main(paths: list[str]) -> None:
    rows: dict[str, dict] = {}
    device = set()
    for path in paths:
        data = json.load(open(path))
        device.add(data["environment"]["device"])
        for row in data["tasks"]:
            rows[row["task"]] = row
    print(f"Device: {', '.join(sorted(device))}\n")
    print("| task | reference correct | cold judge (s) | of which reference (s) | new candidate (s) | "
          "warm judge (s), per minute | speedup vs itself: median (n) | min..max | largest timed case | "
          "reference latency (ms) | achieved | fraction of peak | bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for task in sorted(rows):
        r = rows[task]
        big = largest(r.get("shapes", []))
        verdict = "yes" if r["correct"] else "NO: " + (r.get("reason") or "")[:110].replace("|", "/")
        speedups = [x for x in r.get("speedups", []) if x]
        if len(speedups) > 1:
            speed = f"{r['speedup_median']:.3f} ({len(speedups)})"
            span = f"{r['speedup_min']:.3f}..{r['speedup_max']:.3f}"
        else:
            speed = f"{r['speedup_cold']:.3f} (1)" if r.get("speedup_cold") else "-"
            span = "-"
        phases = r.get("phases_cold", {})
        warm = "-"
        if r.get("warm_mean_s"):
            warm = f"{r['warm_mean_s']} ({r.get('evaluations_per_minute', '-')})"
        cost = [str(r["cold_s"]), str(phases.get("reference", "-")), str(r.get("new_candidate_s", "-")),
                warm, speed, span]
        if big:
            achieved = (f"{big['achieved_tflops']:.1f} TFLOP/s" if big.get("bound") == "compute"
                        else f"{big['achieved_gbs']:.0f} GB/s")
            fraction = f"{100 * big['roofline_fraction']:.1f}%" if big.get("roofline_fraction") else "-"
            cells = [big["case"], f"{big['reference_ms']:.4f}", achieved, fraction, big.get("bound") or "-"]
        else:
            cells = ["-"] * 5
        print(f"| {task} | {verdict} | " + " | ".join(cost + cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
