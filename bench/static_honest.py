"""The judge's static checks over honest Triton kernels: none may be rejected as a cheat.

    python bench/static_honest.py [FOLDER ...]

Runs ``geak_evaluator_triton.static_checks.check_source`` over every ``.py`` file that
defines a ``@...jit`` kernel in the repository's honest sources (the test suite's
references, the ROCm suite's references and tasks, the TritonBench and KernelBench-X
fixtures, the retriever's corpus, the examples), over the ROCm_v1 originals where
``$GEAK_ROCM_BASELINE`` names their folder (each file's code before its test separator, as
the suite times them), and over any FOLDER given. Prints one line per file the checks
reject, then the counts; exits 1 when a file is rejected as a cheat (stage ``anticheat``).
A file rejected at ``import`` names a Triton API this Triton lacks (an honest file written
for another version): counted, not a failure.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HONEST = (
    "tests/fixtures/minisuite",
    "plugins/suite_rocm/geak_suite_rocm/references",
    "plugins/suite_rocm/geak_suite_rocm/tasks",
    "plugins/suite_tritonbench/tests/fixtures",
    "plugins/suite_kernelbenchx/tests/fixtures",
    "plugins/retriever_codesim/geak_retriever_codesim/corpus",
    "examples",
)
SEPARATOR = "#" * 146  # ROCm_v1: the kernel above, its tests below


def kernel_sources(folder: Path) -> list[tuple[str, str]]:
    """(name, code) of every ``.py`` under ``folder`` that has a jit decorator, the code
    above a ROCm_v1 test separator only."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        code = path.read_text(encoding="utf-8", errors="replace")
        if "jit" not in code or "@" not in code:
            continue
        if SEPARATOR in code:
            code = code.split(SEPARATOR)[0]
        try:
            name = str(path.relative_to(ROOT))
        except ValueError:
            name = str(path)
        found.append((name, code))
    return found


def judge(folders: list[Path]) -> tuple[Counter[str], list[str]]:
    """Counts by outcome (``accepted`` or the finding's stage) and a line per rejection."""
    from geak_evaluator_triton.static_checks import check_source

    counts: Counter[str] = Counter()
    lines = []
    for folder in folders:
        for name, code in kernel_sources(folder):
            finding = check_source(code)
            if finding is None:
                counts["accepted"] += 1
                continue
            counts[finding.stage] += 1
            lines.append(f"{finding.stage}: {name}: {finding.reason}")
    return counts, lines


def main(argv: list[str]) -> int:
    folders = [ROOT / f for f in HONEST] + [Path(a) for a in argv]
    originals = os.environ.get("GEAK_ROCM_BASELINE")
    if originals:
        folders.append(Path(originals))
    counts, lines = judge([f for f in folders if f.is_dir()])
    for line in lines:
        print(line)
    total = sum(counts.values())
    print(f"{total} honest kernel files: {counts['accepted']} accepted, {counts['anticheat']} rejected as cheats, "
          f"{counts['import']} with a Triton API this Triton lacks, {counts['contract']} without a kernel")
    return 1 if counts["anticheat"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
