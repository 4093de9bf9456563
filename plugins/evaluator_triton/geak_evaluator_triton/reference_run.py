"""Reference outputs: what the reference produced, kept in memory and optionally on disk.

The on-disk cache holds outputs of the tasks' fixed seeds only (secret seeds
change every session). It lives where the judge's user can read it, and so can
a candidate running as the same user: keep it off (the default) when judging
untrusted code, or point it somewhere candidates' processes cannot reach.
"""

from __future__ import annotations

import ast
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.astutil import dotted_name, parse_source
from geak_core.api.tasks import Case
from geak_core.engine.store import atomic_write
from geak_core.kit import tensorio


@dataclass
class ReferenceRun:
    """What the reference produced for one task, once per (task, mode, device, seeds)."""

    cases: list[Case]
    skipped: list[dict[str, str]]
    stage2_skipped: list[dict[str, str]]
    custom_compare: bool
    seeds: list[int]
    outputs: dict[tuple[str, str, int], Any]
    oracle: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    # The reference's own per-row error against the oracle, per run (see value_compare.py).
    noise: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    timing_seed: int | None = None  # secret seed of the timed runs (outputs under stage "timing")
    # The timed cases' runs on the timing seed are here (or nothing is timed in this mode);
    # False while a busy judge has not yet needed them (ReferenceStore.ensure_timing).
    timing_ready: bool = True
    untimed: dict[str, str] = field(default_factory=dict)  # case -> why the reference could not be timed
    flags: list[str] = field(default_factory=list)  # e.g. reference_seed_fallback
    reference_file: str = ""
    weak: list[str] = field(default_factory=list)  # the harness's weak_result_reason findings
    wall_s: float = 0.0
    # Parts of the reference child's wall time: "start" (until its case table: process,
    # task, harness), "runs" (its runs, inputs and oracle included)
    phases: dict[str, float] = field(default_factory=dict)
    nbytes: int = 0
    heavy_bytes: float = 0.0
    # The reference child's own seconds (start and runs, waits for the device excluded), kept
    # with it on disk: what a candidate's budget scales from (candidate_budget).
    own_s: float = 0.0

    def plan_seeds(self, stage: str, case: Case) -> list[int]:
        return case_seeds(case.bytes, stage, self.seeds, self.heavy_bytes)

    def heavy(self, case: Case) -> bool:
        return bool(self.heavy_bytes and case.bytes and case.bytes > self.heavy_bytes)

    @property
    def runnable(self) -> list[Case]:
        skipped = {s["case"] for s in self.skipped}
        return [c for c in self.cases if c.name not in skipped]

    @property
    def checked(self) -> list[Case]:
        """Runnable cases that the correctness stages compare (timing-only cases excluded)."""
        return [c for c in self.runnable if c.checked]

    @property
    def timed(self) -> list[Case]:
        return [c for c in self.runnable if c.timed and c.name not in self.untimed]

    def stage2_cases(self, enabled: bool) -> list[str]:
        if not enabled:
            return []
        skipped = {s["case"] for s in self.stage2_skipped}
        return [c.name for c in self.checked if c.name not in skipped]


def case_seeds(case_bytes: float | None, stage: str, all_seeds: list[int], heavy_bytes: float) -> list[int]:
    """Seeds a case is checked on in one stage.

    Every seed for ordinary cases. A *heavy* case (more than ``heavy_bytes`` of
    traffic: the large timed shapes) is checked once per stage: stage 1 on the
    last seed (the session's secret seed when there is one), stage 2 on the first,
    so a judgement costs seconds instead of minutes. Its determinism is checked by
    the lighter cases of the same kernel.
    """
    if heavy_bytes and case_bytes and case_bytes > heavy_bytes:
        return [all_seeds[-1]] if stage == "stage1" else [all_seeds[0]]
    return list(all_seeds)


def nbytes_of(value: Any) -> int:
    if hasattr(value, "nbytes") and not isinstance(value, (bytes, bytearray)):
        try:
            return int(value.nbytes)
        except (TypeError, AttributeError):
            return 0
    if isinstance(value, dict):
        return sum(nbytes_of(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes_of(v) for v in value)
    return 0


class DiskCache:
    """Reference outputs per (task key, seed) as tensorio files under ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, key: str, seed: int) -> str:
        return os.path.join(self.root, f"{key}-{seed}.gkt")

    def load(self, key: str, seeds: list[int]) -> dict[str, Any]:
        """{'run': ReferenceRun, 'seeds': [...]} when every seed is on disk, else {}."""
        if not seeds:
            return {}
        run = None
        found = []
        for seed in seeds:
            path = self.path(key, seed)
            if not os.path.exists(path):
                return {}
            try:
                with open(path, "rb") as handle:
                    data = tensorio.loads(bytearray(handle.read()))
            except (OSError, tensorio.TensorIOError):
                return {}
            meta = data["meta"]
            if run is None:
                run = run_from_table(meta, [], 0.0, float(meta.get("own_s") or 0.0))
            for stage, case, value in data["runs"]:
                run.outputs[(stage, case, seed)] = value
            for stage, case, value in data.get("noise", []):
                run.noise[(stage, case, seed)] = value
            found.append(seed)
        return {"run": run, "seeds": found}

    def store(self, key: str, run: ReferenceRun, seeds: list[int]) -> None:
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        meta = {**case_table(run, seeds), "own_s": run.own_s}
        for seed in seeds:
            path = self.path(key, seed)
            if os.path.exists(path):
                continue
            runs = [[s, c, v] for (s, c, sd), v in run.outputs.items() if sd == seed and s != "timing"]
            noise = [[s, c, v] for (s, c, sd), v in run.noise.items() if sd == seed]
            atomic_write(path, tensorio.dumps({"meta": meta, "runs": runs, "noise": noise}), fsync=False)


class ReferenceTimes:
    """How long each reference's child took the last time a judge ran it (its own seconds,
    waits for the device left out), one small file per reference key under ``root``: a
    later judge gives that reference a budget scaled from it instead of the flat
    ``reference_timeout_s`` (``ReferenceStore.budget``)."""

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, key: str) -> str:
        return os.path.join(self.root, f"{key}.json")

    def _read(self, key: str) -> dict[str, Any]:
        try:
            with open(self.path(key), encoding="utf-8") as handle:
                data = json.load(handle)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def own_s(self, key: str) -> float:
        """The reference's own seconds when it last finished (0: unknown, or it failed)."""
        data = self._read(key)
        try:
            return 0.0 if data.get("failed") else max(0.0, float(data["own_s"]))
        except (KeyError, TypeError, ValueError):
            return 0.0

    def cost_s(self, key: str) -> float:
        """Seconds the reference took last time, a failed one's included, plus the seconds its
        timed runs and the baseline's timer took before a correct candidate could be timed,
        when an earlier judge got that far (0: unknown): what ``TritonEvaluator`` orders a
        batch's references and jobs by."""
        data = self._read(key)
        try:
            own = max(0.0, float(data["own_s"]))
        except (KeyError, TypeError, ValueError):
            return 0.0
        try:
            return own + max(0.0, float(data.get("timing_s") or 0.0))
        except (TypeError, ValueError):
            return own

    def timed_out(self, key: str) -> dict[str, Any] | None:
        """When the reference's last run ran out of its budget: {"budget_s", "when"}."""
        data = self._read(key)
        try:
            budget = float(data.get("timed_out_s") or 0.0)
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(data.get("at") or 0.0)))
        except (TypeError, ValueError):
            return None
        return {"budget_s": budget, "when": when} if budget > 0 else None

    def table(self, key: str) -> dict[str, Any] | None:
        """The case table the reference's last run sent (``case_table``), when it finished
        cleanly: what a later judge plans a candidate on before running the reference
        (``ReferenceStore.recorded_table``)."""
        return self._recorded_table(key, failed=False)

    def failed_table(self, key: str) -> dict[str, Any] | None:
        """The case table a failed reference run sent before it failed, if it sent one: a
        later judge runs the task's candidates on it and decides those that fail on their own
        (``ReferenceStore._keep_failed_table``)."""
        return self._recorded_table(key, failed=True)

    def _recorded_table(self, key: str, failed: bool) -> dict[str, Any] | None:
        data = self._read(key)
        table = data.get("failed_table" if failed else "table")
        return table if isinstance(table, dict) and bool(data.get("failed")) == failed else None

    def store(self, key: str, own_s: float, failed: bool = False, timed_out_s: float = 0.0,
              table: dict[str, Any] | None = None) -> None:
        """Remember a run: ``own_s`` its own seconds; ``failed``: it ended in a judge error
        (then ``own_s`` is how long it ran: ordered first next time, its budget the flat one);
        ``timed_out_s``: it was killed at this budget (a later judge with no larger budget
        gives its candidates that judge error instead of running it again); ``table``: its
        case table (``case_table``): for a run that finished on every seed without a flag, or
        (``failed``) what a failed run sent before it failed."""
        if own_s <= 0:
            return
        record: dict[str, Any] = {"own_s": round(own_s, 3), "failed": failed, "at": time.time()}
        if timed_out_s > 0:
            record["timed_out_s"] = round(timed_out_s, 1)
        if table is not None:
            record["failed_table" if failed else "table"] = table
        earlier = self._read(key).get("timing_s")
        if not failed and earlier:
            record["timing_s"] = earlier  # the timing preparation is not redone with every reference
        self._write(key, record)

    def store_timing(self, key: str, seconds: float) -> None:
        """Remember how long a correct candidate waited for the reference's timed runs and the
        baseline's timer (``timing_s``, beside the reference's own seconds)."""
        record = self._read(key)
        if seconds <= 0 or "own_s" not in record:
            return
        record["timing_s"] = round(seconds, 3)
        self._write(key, record)

    def _write(self, key: str, record: dict[str, Any]) -> None:
        try:
            atomic_write(self.path(key), json.dumps(record), fsync=False)
        except OSError:
            pass  # a budget not remembered: the next judge uses the flat one


def case_table(run: ReferenceRun, fixed_seeds: list[int]) -> dict[str, Any]:
    """What a candidate's plan needs of a finished reference run, outputs aside: its cases,
    which are skipped (here, and in stage 2), its compare and weak-result findings, and the
    fixed seeds it ran on (a later judge with other fixed seeds cannot use it)."""
    return {
        "cases": [c.to_dict() for c in run.cases],
        "skipped": run.skipped,
        "stage2_skipped": run.stage2_skipped,
        "custom_compare": run.custom_compare,
        "reference_file": run.reference_file,
        "weak": list(run.weak),
        "fixed_seeds": list(fixed_seeds),
    }


def run_from_table(table: dict[str, Any], seeds: list[int], heavy_bytes: float, own_s: float) -> ReferenceRun:
    """A provisional run from a recorded ``case_table``: the plan on ``seeds``, no outputs yet."""
    return ReferenceRun(
        cases=[Case.from_dict(c) for c in table["cases"]],
        skipped=list(table["skipped"]),
        stage2_skipped=list(table["stage2_skipped"]),
        custom_compare=bool(table["custom_compare"]),
        seeds=list(seeds),
        outputs={},
        reference_file=str(table.get("reference_file") or ""),
        weak=list(table.get("weak") or []),
        heavy_bytes=heavy_bytes,
        own_s=own_s,
    )


def compile_work(path: str | None) -> int:
    """How much a reference file has to compile, roughly, before anything is known of it
    (for ordering references only). Each ``@triton.jit`` kernel counts its autotuner configs
    (each config is another compile; one without an autotuner counts one), times one plus
    its ``tl.dot`` calls, times one plus its loops: matrix products inside pipelined loops
    are what keeps ``ptxas`` busy. On the published TritonBench-G references this ranks the
    reference seconds measured on an H200 better than counting kernels and configs (rank
    correlation 0.48 against 0.36 over 180 tasks); the one that never finished within five
    minutes, four small autotuned kernels with fp32 products in loops, moved from 11th to
    3rd. A file that does not parse counts its kernels and configs."""
    if not path:
        return 0
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return 0
    try:
        tree = parse_source(text, filename=path)
    except (SyntaxError, ValueError, SystemError, RecursionError):
        return len(re.findall(r"@\s*(?:triton\.)?jit\b", text)) + len(re.findall(r"\bConfig\(", text))
    work = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(_last_name(d) == "jit" for d in node.decorator_list):
            configs = max([1] + [_config_count(d) for d in node.decorator_list if _last_name(d) == "autotune"])
            dots = sum(1 for n in ast.walk(node) if isinstance(n, ast.Call) and _last_name(n) == "dot")
            loops = sum(1 for n in ast.walk(node) if isinstance(n, (ast.For, ast.While)))
            work += configs * (1 + dots) * (1 + loops)
    return work


def _last_name(node: ast.AST) -> str:
    """The last name a decorator or call spells: ``triton.autotune(...)`` and ``tl.dot(a, b)`` give ``autotune`` and ``dot``."""
    if isinstance(node, ast.Call):
        node = node.func
    return dotted_name(node).rsplit(".", 1)[-1]


def _config_count(autotune: ast.AST) -> int:
    """An autotuner's configs: ``Config(...)`` written out, or a comprehension's product of
    literal lists (``[Config(...) for b in [32, 64] for w in [4, 8]]`` is four)."""
    written = sum(1 for n in ast.walk(autotune) if isinstance(n, ast.Call) and _last_name(n) == "Config")
    products = [1]
    for n in ast.walk(autotune):
        if isinstance(n, (ast.ListComp, ast.GeneratorExp)):
            count = 1
            for generator in n.generators:
                if isinstance(generator.iter, (ast.List, ast.Tuple, ast.Set)):
                    count *= max(1, len(generator.iter.elts))
            products.append(count)
    return max(written, max(products), 1)


TIMED_CASE_S = 1.0  # a candidate's budget grows by this per timed case (warm-up and blocks)


def scaled_budget(own_s: float, ceiling_s: float, scale: float, floor_s: float, extra_s: float = 0.0) -> float:
    """``scale`` times a reference's own seconds, at least ``floor_s``, plus ``extra_s``, at
    most ``ceiling_s``; ``ceiling_s`` alone when ``scale`` is 0 or the time is unknown (0).
    A candidate's budget (``candidate_budget``) and a reference's rerun (``ReferenceStore.budget``)."""
    if scale <= 0 or own_s <= 0:
        return ceiling_s
    return min(ceiling_s, max(floor_s, scale * own_s) + extra_s)


def candidate_budget(ref: ReferenceRun, timeout_s: float, scale: float, floor_s: float) -> tuple[float, str]:
    """A candidate's wall-clock budget for this reference, and the clause that explains it:
    ``scaled_budget`` with TIMED_CASE_S a timed case added, at most ``timeout_s``;
    ``timeout_s`` alone when ``scale`` is 0 or the reference's time is unknown."""
    if scale <= 0 or ref.own_s <= 0:
        return timeout_s, ""
    budget = scaled_budget(ref.own_s, timeout_s, scale, floor_s, TIMED_CASE_S * len(ref.timed))
    return budget, (f"its budget: {scale:g} x the reference's {ref.own_s:.1f} s, at least {floor_s:.0f} s, "
                    f"+{TIMED_CASE_S:g} s a timed case, at most {timeout_s:.0f} s")
