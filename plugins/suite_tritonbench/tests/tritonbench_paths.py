"""Where the test data lives; our own fixtures in the TritonBench formats, never the real data."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
GEAK_EVAL_ROOT = FIXTURES / "TritonBench"  # GEAK-eval layout: data/ + performance_metrics/
DATA = GEAK_EVAL_ROOT / "data"  # the original release's layout: TritonBench_G_v1/ + its JSON
TASKS = DATA / "TritonBench_G_v1"
PERF = GEAK_EVAL_ROOT / "performance_metrics" / "perf_G" / "golden_metrics"
USABLE = {"add_vectors", "relu_kernel", "row_softmax", "scale_check", "square_fn", "tiny_matmul"}
UNUSABLE = {"bad_syntax", "no_separator", "no_test"}  # broken task files
LISTED_ONLY = {"not_in_folder"}  # in the instruction JSON, without a task file
SEPARATOR = "#" * 146
