"""Where the test data lives: our own fixtures in KernelBench-X's formats, and a checkout of
the benchmark under .ext/KernelBenchX when one is present (tests on it skip otherwise)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = FIXTURES / "KernelBenchX"  # a checkout's layout: data/kernelbenchx/<Category>/, metrics/
TASKS = ROOT / "data" / "kernelbenchx"
CHECKOUT = Path(__file__).resolve().parents[3] / ".ext" / "KernelBenchX"
USABLE = {"softsign", "softsign_fp16", "scaled_sum", "mul_w8a8"}
SEPARATOR = "#" * 146
