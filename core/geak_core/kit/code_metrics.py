"""Code metrics of a candidate, as KernelBench-X reports them beside correctness and speed.

* ``cc_mean`` / ``cc_max``: McCabe cyclomatic complexity of the module's functions
  and methods (kernels, launchers, helpers), mean and largest;
* ``maintainability_index``: the maintainability index (0-100, higher is easier
  to maintain; radon's variant, multi-line strings counted as comments);
* ``sloc``: source lines of code.

radon computes all three; it is optional (``pip install 'geak-core[report]'``),
and without it, or for code that does not parse, every figure is None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

METRIC_FIELDS = ("cc_mean", "cc_max", "maintainability_index", "sloc")


@dataclass(frozen=True)
class CodeMetrics:
    cc_mean: float | None = None
    cc_max: int | None = None
    maintainability_index: float | None = None
    sloc: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def radon_available() -> bool:
    try:
        import radon  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=4096)
def code_metrics(code: str) -> CodeMetrics:
    """The metrics of ``code``; all None where radon is missing or the code does not parse."""
    if not code.strip():
        return CodeMetrics()
    try:
        from radon.complexity import cc_visit
        from radon.metrics import mi_visit
        from radon.raw import analyze
    except ImportError:
        return CodeMetrics()
    from geak_core.api.astutil import one_parse_at_a_time

    try:  # radon parses with ast.parse: one thread at a time, as every parse here
        blocks, maintainability, raw = one_parse_at_a_time(
            lambda: (cc_visit(code), mi_visit(code, multi=True), analyze(code)))
    except (SyntaxError, ValueError, TypeError):
        return CodeMetrics()
    # radon lists a class's methods beside it; the class's own figure would count them twice
    complexities = [b.complexity for b in blocks if not hasattr(b, "methods")]
    return CodeMetrics(
        cc_mean=round(sum(complexities) / len(complexities), 3) if complexities else None,
        cc_max=max(complexities) if complexities else None,
        maintainability_index=round(float(maintainability), 3),
        sloc=int(raw.sloc),
    )


__all__ = ["METRIC_FIELDS", "CodeMetrics", "code_metrics", "radon_available"]
