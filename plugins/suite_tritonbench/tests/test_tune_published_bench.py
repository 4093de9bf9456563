"""``bench/tune_published.py`` on a small published-style file of our fixture tasks.

In process, with a stand-in judge that times by the launch's block literal (correct up to
128, the speedup the block over 32; relu_kernel's record is wrong): which records are
judged and tuned, the improvement and its geometric mean, ``--verdicts``, ``--limit-s`` and
the resumed ``--json`` file. Once, as a real subprocess on the CPU with the real judge: a
correct record is not tuned, and no improvement is reported.

The records: add_vectors (BLOCK_SIZE=64, tied to its grid), relu_kernel (made wrong),
square_fn (BLOCK=32), scale_check (no code in the reply), bad_syntax (a task the suite
cannot use) and row_softmax (its block is computed, so no knob).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.model import EvalResult
from tritonbench_paths import DATA

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPT = BENCH / "tune_published.py"
JUDGED: list[str] = []


def _label(name: str) -> str:
    entries = json.loads((DATA / "TritonBench_G_v1.json").read_text())
    return next(e["output"] for e in entries if e["file"] == name)


def _reply(code: str) -> str:
    return f"Here is the kernel.\n```python\n{code}```\n"


@pytest.fixture
def records(tmp_path) -> Path:
    lines = [
        {"instruction": "Add.", "label": _label("add_vectors.py"), "predict": _reply(_label("add_vectors.py"))},
        {"instruction": "ReLU.", "label": _label("relu_kernel.py"),
         "predict": _reply(_label("relu_kernel.py").replace("tl.maximum", "tl.minimum"))},
        {"instruction": "Square.", "label": _label("square_fn.py"), "predict": _reply(_label("square_fn.py"))},
        {"instruction": "Scale.", "label": _label("scale_check.py"), "predict": "I cannot write this kernel."},
        {"instruction": "Broken.", "label": _label("bad_syntax.py"), "predict": _reply("x = 1\n")},
        # its launch passes its options in **kwargs (which may hold num_warps): nothing to tune
        {"instruction": "Softmax.", "label": _label("row_softmax.py"), "predict": _reply(_label("row_softmax.py").replace(
            "BLOCK=triton.next_power_of_2(cols))", "**{'BLOCK': triton.next_power_of_2(cols)})"))},
    ]
    path = tmp_path / "output_fixture_comp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


class LaunchBlockJudge(EvaluatorBase):
    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        JUDGED.append(candidate.id)
        # the launch's literal block (32 where it computes one), and its warps (Triton's 4 where
        # it gives none): faster the larger the block, a little slower away from 4 warps
        block = re.search(r"BLOCK(?:_SIZE)?=(\d+)", candidate.code)
        warps = re.search(r"num_warps=(\d+)", candidate.code)
        block, warps = int(block.group(1)) if block else 32, int(warps.group(1)) if warps else 4
        correct = block <= 128 and task.id != "relu_kernel"
        speed = block / 32 / (1 + abs(math.log2(warps / 4)) / 100)
        return EvalResult(task.id, candidate.id, call_ok=True, correct=correct, mode="gpu", device="stand-in",
                          speedup=speed if correct else None, performance_measured=correct,
                          failed_stage=None if correct else "stage1")

    def evaluate_many(self, jobs, **_):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


class LaunchBlockPlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("launch-block", LaunchBlockJudge)


@pytest.fixture
def bench(monkeypatch):
    """``main`` of the script, with the stand-in judge registered."""
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    monkeypatch.syspath_prepend(str(BENCH))
    import tune_published

    JUDGED.clear()
    reset_plugin_manager(PluginManager(extra_plugins=[("launch-block", LaunchBlockPlugin())]))

    def run(records: Path, out: Path, *extra: str) -> int:
        return tune_published.main(["--data", str(DATA), "--records", str(records), "--json", str(out),
                                    "--evaluator", "launch-block", *extra])

    return run


def _rows(out: Path) -> dict[int, dict]:
    return {row["line"]: row for row in json.loads(out.read_text())["rows"]}


def test_records_with_knobs_are_judged_and_tuned_and_the_others_say_why_not(bench, records, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert bench(records, out) == 0
    rows = _rows(out)
    assert {n: rows[n]["status"] for n in rows} == {
        1: "tuned", 2: "not correct", 3: "tuned", 4: "no code", 5: "skipped", 6: "no tunable knobs"}
    assert {cid.split("-")[0] for cid in JUDGED} == {f"{records.name}:{n}" for n in (1, 2, 3)}

    add = rows[1]
    # the knobs the tuner's search varies: a loopless kernel's default num_stages is not one
    assert add["knobs"] == ["add_kernel.BLOCK_SIZE=64", "add_kernel.num_warps=4 (default)"]
    assert (add["untuned_speedup"], add["tuned_speedup"], add["improvement"]) == (2.0, 4.0, 2.0)
    assert add["changes"] == ["add_kernel.BLOCK_SIZE 64->128"] and "BLOCK_SIZE=128" in add["diff"]
    # The stand-in judge finds blocks over 128 wrong: of the variants the grid sends (how many is
    # the tuner's search: blocks by warps), some are correct, one of them the fastest, and the
    # record says not all were correct.
    assert add["variants_judged"] > add["variants_correct"] >= 1 and add["all_variants_correct"] is False
    assert add["kept_correct"] is True
    assert rows[3]["improvement"] == 4.0  # square_fn: 32 -> 128

    summary = json.loads(out.read_text())["summary"]
    assert (summary["records"], summary["with_knobs"], summary["judged"], summary["correct"]) == (6, 3, 3, 2)
    assert (summary["tuned"], summary["improved"]) == (2, 2)
    assert summary["improvement_geomean"] == pytest.approx(math.sqrt(2.0 * 4.0))
    assert summary["target_met"] is True
    printed = capsys.readouterr().out
    judged, correct = add["variants_judged"], add["variants_correct"]
    assert (f"| 1 | add_vectors | 2.000x | 4.000x | 2.000 | add_kernel.BLOCK_SIZE 64->128 | {judged} ({correct}) "
            "| tuned |") in printed
    assert "improvement, geometric mean over the 2 tuned records: 2.828x" in printed


def test_records_the_verdicts_file_judged_wrong_are_left_out_unjudged(bench, records, tmp_path):
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"task": "relu_kernel", "candidate": f"{records.name}:2", "correct": False,
                                    "failed_stage": "stage1", "reason": "values differ", "flags": []}) + "\n")
    out = tmp_path / "out.json"
    assert bench(records, out, "--verdicts", str(verdicts)) == 0
    relu = _rows(out)[2]
    assert (relu["status"], relu["reason"]) == ("not correct (verdicts)", "stage1: values differ")
    assert not any(cid.startswith(f"{records.name}:2") for cid in JUDGED)
    assert json.loads(out.read_text())["summary"]["left_out_by_verdicts"] == 1


def test_the_time_limit_starts_no_judging_and_a_second_run_does_only_the_rest(bench, records, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert bench(records, out, "--limit-s", "1e-9") == 0
    assert sorted(_rows(out)) == [4, 5, 6] and JUDGED == []  # decided without the judge
    assert "3 record(s) not started" in capsys.readouterr().err
    assert bench(records, out) == 0
    assert sorted(_rows(out)) == [1, 2, 3, 4, 5, 6]
    JUDGED.clear()
    assert bench(records, out) == 0 and JUDGED == []
    assert bench(records, out, "--seconds", "60") == 2
    assert "seconds = 120.0, not 60.0" in capsys.readouterr().err


def test_the_table_is_printed_from_a_results_file(bench, records, tmp_path, capsys):
    import tune_published

    out = tmp_path / "out.json"
    assert bench(records, out) == 0
    capsys.readouterr()
    assert tune_published.main(["--table", str(out)]) == 0
    table = capsys.readouterr().out
    assert table.startswith(f"{records.name} tuned by `grid` (120.0 s, 64 variants a record) on stand-in (gpu)")
    assert "| 6 | row_softmax | - | - | - | - | - | no tunable knobs |" in table


@pytest.mark.slow
def test_on_the_cpu_a_correct_record_is_not_tuned_and_no_improvement_is_reported(records, tmp_path):
    out = tmp_path / "out.json"
    env = {**os.environ, "TRITON_INTERPRET": "1", "GEAK_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(SCRIPT), "--mode", "interpreter", "--data", str(DATA),
                           "--records", str(records), "--json", str(out), "--workers", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _rows(out)
    assert (rows[1]["status"], rows[1]["correct"], rows[1]["untuned_speedup"]) == ("not timed", True, None)
    assert rows[1]["notes"][0].startswith("tuning skipped: speed not measured")
    assert rows[2]["status"] == "not correct"
    assert "there is no improvement to report" in done.stdout


def test_shards_split_the_records_to_tune_and_their_tables_merge_into_the_whole(bench, records, tmp_path, capsys):
    import tune_published

    whole, first, second = tmp_path / "whole.json", tmp_path / "s0.json", tmp_path / "s1.json"
    assert bench(records, whole) == 0
    assert bench(records, first, "--shard", "0/2") == 0 and bench(records, second, "--shard", "1/2") == 0
    # the records to tune (lines 1, 2, 3) alternate over the shards; the others go to shard 0's file
    assert sorted(_rows(first)) == [1, 3, 4, 5, 6] and sorted(_rows(second)) == [2]
    assert bench(records, first, "--shard", "1/2") == 2  # a file is one shard's
    assert bench(records, first, "--shard", "2/2") == 2 and "K must be in 0..N-1" in capsys.readouterr().err
    assert tune_published.main(["--table", f"{first},{second}"]) == 0
    merged = capsys.readouterr().out
    assert tune_published.main(["--table", str(whole)]) == 0
    tune_results_summary = capsys.readouterr().out
    assert merged.splitlines()[-6:] == tune_results_summary.splitlines()[-6:]  # the same summary lines
    assert "improvement, geometric mean over the 2 tuned records: 2.828x" in merged
