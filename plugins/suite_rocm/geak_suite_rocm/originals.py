"""The published ROCm_v1 kernels as modules this suite can time (``[suite] baseline``).

GEAK's speedups are measured against the expert kernels of GEAK-eval's
``ROCm_v1`` folder, not against our references. Given a user's copy of that
folder, ``prepare`` turns each task's file into an importable module that the
judge times in place of our reference (``Task.timing_baseline``); our
reference still decides correctness.

A ``ROCm_v1`` file is the kernel part, a line of exactly 146 ``#`` (trailing
blanks allowed), then a pytest harness. The module keeps the kernel part only
(importing the harness would collect and run tests), and the kernels are
launched by our harness, whose launch contract is the originals' signatures.

What the kernel parts need to run with a current Triton on NVIDIA GPUs is
rewritten line by line, so every line keeps its number and an error points at
the same line of the user's file. The rewrites (``PORTS``):

* ``constexpr_global``: ``NAME: tl.constexpr = value`` at module level becomes
  ``NAME = tl.constexpr(value)``: Triton 3.6 lets a kernel read a global only
  when it *is* a constexpr; an annotation no longer makes it one.
* ``removed_triton_api``: an import of a Triton API removed in newer releases
  (``triton.backends.compiler.AttrsDescriptor``, gone in 3.3;
  ``triton.tools.experimental_descriptor``, gone in 3.4) that nothing in the
  kernel part uses becomes a comment (the originals' compile tests, in the
  harness part, used them).
* ``test_only_import``: ``import pytest`` or ``import multiprocessing``, unused
  by the kernels, becomes a comment, so the kernels run where pytest is not
  installed and pass the judge's static checks (which refuse multiprocessing).
* ``flip_last_dim``: ``tl.flip(x)`` becomes ``tl.flip(x, -1)``: older Triton
  flipped the last dimension when none was given; 3.6 fails on the default.

Not rewritten because our harness already copes: AMD-only autotune config keys
(``waves_per_eu``, ``kpack``, ``matrix_instr_nonkdim``) are removed from the
configs by ``geak_core.api.harness.launch`` on other backends, and the
``float8_*fnuz`` types appear only in module globals the originals' own
harnesses read (ours picks the platform's fp8 type).

A task whose original is missing or unusable still gets a module: one that
raises at import with the reason, so judging the task on a GPU (where the
judge warms the timing baseline first) ends in a judge error naming it
instead of quietly timing something else.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.engine.store import CACHE_ENV
from geak_core.engine.store import cache_dir as shared_cache_dir

SEPARATOR = "#" * 146
PROVENANCE = "# geak-core: derived from "

# Imports of APIs later Triton releases removed: module -> names (None: the whole module).
REMOVED_TRITON_APIS: dict[str, frozenset[str] | None] = {
    "triton.backends.compiler": frozenset({"AttrsDescriptor"}),
    "triton.tools.experimental_descriptor": None,
}
# Imports only the originals' test harnesses need: pytest, and multiprocessing (the compile
# tests of test_kernel_dot and test_kernel_sub fork; the judge's static checks refuse it).
TEST_ONLY_MODULES = frozenset({"pytest", "multiprocessing"})


class OriginalError(Exception):
    """A ROCm_v1 file that cannot serve as a timing baseline (the message says why)."""


@dataclass(frozen=True)
class Port:
    """One rewritten line of a kernel part (1-based line number, as in the user's file)."""

    line: int
    rule: str
    before: str
    after: str

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "rule": self.rule, "before": self.before, "after": self.after}


@dataclass
class Original:
    """A task's original as prepared for timing: ``module`` is always importable-or-explaining."""

    task_id: str
    source: Path
    module: Path
    ports: list[Port] = field(default_factory=list)
    problem: str = ""  # empty when the original is usable

    def describe(self) -> dict[str, object]:
        """JSON-serialisable summary, kept in ``Task.extra["timing_baseline"]``."""
        return {
            "original": str(self.source),
            "module": str(self.module),
            "ports": [p.to_dict() for p in self.ports],
            "problem": self.problem,
        }


def cache_dir() -> Path:
    return shared_cache_dir("rocm-originals")


def kernel_part(text: str, where: str) -> tuple[str, int]:
    """(text before the separator, its 1-based line number); OriginalError without one."""
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        if line.strip() == SEPARATOR:
            return "".join(lines[: number - 1]), number
    raise OriginalError(
        f"{where}: no separator line (a line of exactly 146 '#') between the kernels and the "
        "test harness; is this a GEAK-eval ROCm_v1 file?"
    )


# ---------------------------------------------------------------------------
# Line rewrites
# ---------------------------------------------------------------------------

_CONSTEXPR_GLOBAL = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*:\s*tl\.constexpr\s*=\s*(?P<value>.+?)\s*$")
_FROM_IMPORT = re.compile(r"^from\s+(?P<module>[\w.]+)\s+import\s+(?P<names>[\w\s,]+?)\s*$")
_IMPORT = re.compile(r"^import\s+(?P<module>[\w.]+)\s*$")


def _uses(code_without_line: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", code_without_line) is not None


def _balanced(expression: str) -> bool:
    depth = 0
    for char in expression:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _port_constexpr_global(line: str) -> str | None:
    match = _CONSTEXPR_GLOBAL.match(line.rstrip("\n"))
    if not match or "#" in match["value"] or not _balanced(match["value"]):
        return None
    return f"{match['name']} = tl.constexpr({match['value']})"


def _removed(module: str, name: str) -> bool:
    """Whether ``from module import name`` names an API newer Triton releases removed."""
    if f"{module}.{name}" in REMOVED_TRITON_APIS and REMOVED_TRITON_APIS[f"{module}.{name}"] is None:
        return True
    if module not in REMOVED_TRITON_APIS:
        return False
    names = REMOVED_TRITON_APIS[module]
    return names is None or name in names


def _port_import(line: str, rest: str, removed: bool) -> str | None:
    """Comments out an unused import of a removed Triton API (``removed``) or a test-only
    module (not ``removed``); keeps the other names of a ``from ... import`` line."""
    text = line.strip()
    match = _FROM_IMPORT.match(text)
    if match:
        if not removed:
            return None
        module = match["module"]
        names = [n.strip() for n in match["names"].split(",") if n.strip()]
        drop = [n for n in names if _removed(module, n) and not _uses(rest, n)]
        if not drop:
            return None
        keep = [n for n in names if n not in drop]
        note = f"# [port] removed in newer Triton, unused by the kernels: {text}"
        return f"from {module} import {', '.join(keep)}  {note}" if keep else note
    match = _IMPORT.match(text)
    if not match or _uses(rest, match["module"]):
        return None
    module = match["module"]
    if removed and module in REMOVED_TRITON_APIS and REMOVED_TRITON_APIS[module] is None:
        return f"# [port] removed in newer Triton, unused by the kernels: {text}"
    if not removed and module in TEST_ONLY_MODULES:
        return f"# [port] test-only import, unused by the kernels: {text}"
    return None


def _port_flip_last_dim(line: str) -> str | None:
    """``tl.flip(x)`` (one argument) -> ``tl.flip(x, -1)``; other calls untouched."""
    out, start, changed = [], 0, False
    for match in re.finditer(r"\btl\.flip\(", line):
        open_at = match.end()
        depth, index, commas = 1, open_at, 0
        while index < len(line) and depth:
            char = line[index]
            depth += char in "([{"
            depth -= char in ")]}"
            commas += char == "," and depth == 1
            index += 1
        if depth or commas or not line[open_at:index - 1].strip():
            continue
        out.append(line[start:index - 1] + ", -1)")
        start, changed = index, True
    if not changed:
        return None
    out.append(line[start:])
    return "".join(out).rstrip("\n")


def _rewrites(lines: list[str], index: int) -> list[tuple[str, str | None]]:
    """(rule, rewritten line or None) for line ``index``; module-level rules skip indented lines."""
    line = lines[index]
    top_level = not line[:1].isspace()
    rest = "\n".join(  # the code that could use a name this line imports
        other for number, other in enumerate(lines)
        if number != index and not _FROM_IMPORT.match(other.strip())
        and not _IMPORT.match(other.strip()) and not other.lstrip().startswith("#")
    )
    return [
        ("constexpr_global", _port_constexpr_global(line) if top_level else None),
        ("removed_triton_api", _port_import(line, rest, True) if top_level else None),
        ("test_only_import", _port_import(line, rest, False) if top_level else None),
        ("flip_last_dim", _port_flip_last_dim(line)),
    ]


def port(kernel: str) -> tuple[str, list[Port]]:
    """The kernel part with the ``PORTS`` applied line by line (line count unchanged)."""
    lines = kernel.splitlines()
    ports: list[Port] = []
    for index in range(len(lines)):
        for rule, new in _rewrites(lines, index):
            if new is not None and new != lines[index]:
                ports.append(Port(index + 1, rule, lines[index].strip(), new.strip()))
                lines[index] = new
                break
    return ("\n".join(lines) + "\n" if lines else ""), ports


PORTS = ("constexpr_global", "removed_triton_api", "test_only_import", "flip_last_dim")


# ---------------------------------------------------------------------------
# Modules in the cache
# ---------------------------------------------------------------------------


def folder_for(source_folder: Path) -> Path:
    """Where the modules derived from ``source_folder`` are written."""
    digest = hashlib.sha256(str(source_folder.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / digest


def _write(target: Path, content: str) -> None:
    from geak_core.engine.store import (
        atomic_write,  # here: the run store is not needed to load tasks
    )

    try:
        if target.is_file() and target.read_text(encoding="utf-8") == content:
            return
        atomic_write(target, content)
    except OSError as exc:
        raise OriginalError(
            f"cannot write {target.name} to {target.parent} ({exc}); set {CACHE_ENV} to a "
            "writable folder"
        ) from None


def _trailer(source: Path, separator_line: int, ports: list[Port]) -> str:
    lines = [
        "",
        f"{PROVENANCE}{source} (lines 1-{separator_line - 1}, the kernel part; line numbers "
        "are the file's)",
    ]
    lines += [f"# [port] line {p.line} ({p.rule}): {p.before!r} -> {p.after!r}" for p in ports]
    return "\n".join(lines) + "\n"


def _failing_module(task_id: str, source: Path, problem: str) -> str:
    message = f"no timing baseline for rocm/{task_id}: {problem}"
    return (
        f"{PROVENANCE}{source}, which cannot be used: the judge's timing reports this error.\n"
        f"raise RuntimeError({message!r})\n"
    )


def prepare_one(task_id: str, module_name: str, source_folder: Path) -> Original:
    """The timing module of one task from ``source_folder/<task_id>.py``, written to the cache."""
    source = source_folder / f"{task_id}.py"
    target = folder_for(source_folder) / f"{module_name}.py"
    original = Original(task_id, source, target)
    try:
        try:
            text = source.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise OriginalError(f"{source}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise OriginalError(f"{source}: cannot read: {exc}") from None
        kernel, separator_line = kernel_part(text, str(source))
        ported, original.ports = port(kernel)
        try:
            compile(ported, str(source), "exec")
        except SyntaxError as exc:
            raise OriginalError(f"{source}:{exc.lineno}: the kernel part does not parse: "
                                f"{exc.msg}") from None
        _write(target, ported + _trailer(source, separator_line, original.ports))
    except OriginalError as exc:
        original.problem = str(exc)
        original.ports = []
        _write(target, _failing_module(task_id, source, original.problem))
    return original
