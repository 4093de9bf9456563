"""Markdown table of suite references judged on a GPU, from bench/evaluator.py JSON files.

    python bench/reference_table.py out1.json out2.json ...

Later files win for a task judged twice. Per task: verdict, cold judgement time,
speedup of the reference against itself, and at the largest timed shape its latency,
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
    print("| task | reference correct | cold judge (s) | speedup vs itself | largest timed case | "
          "reference latency (ms) | achieved | fraction of peak | bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for task in sorted(rows):
        r = rows[task]
        big = largest(r.get("shapes", []))
        verdict = "yes" if r["correct"] else "NO: " + (r.get("reason") or "")[:110].replace("|", "/")
        speed = f"{r['speedup_cold']:.3f}" if r.get("speedup_cold") else "-"
        if big:
            achieved = (f"{big['achieved_tflops']:.1f} TFLOP/s" if big.get("bound") == "compute"
                        else f"{big['achieved_gbs']:.0f} GB/s")
            fraction = f"{100 * big['roofline_fraction']:.1f}%" if big.get("roofline_fraction") else "-"
            cells = [big["case"], f"{big['reference_ms']:.4f}", achieved, fraction, big.get("bound") or "-"]
        else:
            cells = ["-"] * 5
        print(f"| {task} | {verdict} | {r['cold_s']} | {speed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
