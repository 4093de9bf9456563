"""TritonBench tasks through the real judge, under the interpreter, in child processes."""

from __future__ import annotations

import pytest

pytest.importorskip("geak_evaluator_triton.evaluator")

from geak_core.api.model import Candidate  # noqa: E402
from geak_evaluator_triton.evaluator import TritonEvaluator  # noqa: E402
from geak_evaluator_triton.options import TritonEvaluatorOptions  # noqa: E402
from tritonbench_paths import DATA  # noqa: E402

pytestmark = pytest.mark.slow
DATA_JSON = DATA / "TritonBench_G_v1.json"


@pytest.fixture(scope="module")
def judge():
    evaluator = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", workers=1))
    yield evaluator
    evaluator.close()


def _judge(judge, task, code):
    return judge.evaluate(task, Candidate(id="c", task_id=task.id, code=code))


@pytest.mark.parametrize("task_id", ["add_vectors", "row_softmax", "tiny_matmul"])
def test_the_reference_judged_as_its_own_candidate_is_correct(make_suite, judge, task_id):
    task = make_suite().get(task_id)
    result = _judge(judge, task, open(task.reference).read())
    assert (result.call_ok, result.correct, result.reason) == (True, True, None)


def test_a_wrong_candidate_is_rejected_by_the_comparison(make_suite, judge):
    task = make_suite().get("add_vectors")
    wrong = open(task.reference).read().replace("x + y", "x - y")
    result = _judge(judge, task, wrong)
    assert result.call_ok and not result.correct
    assert result.failed_stage == "stage1" and "test" in result.reason


def test_a_candidate_without_the_wrapper_the_test_calls_breaks_the_contract(make_suite, judge):
    task = make_suite().get("relu_kernel")
    renamed = open(task.reference).read().replace("def relu(", "def relu_forward(")
    result = _judge(judge, task, renamed)
    assert result.failed_stage == "contract" and "'relu'" in result.reason


def test_an_autograd_alias_entry_point_is_accepted(make_suite, judge):
    task = make_suite().get("square_fn")
    result = _judge(judge, task, open(task.reference).read())
    assert result.correct, result.reason


def test_a_correct_candidate_on_a_weak_test_is_flagged(make_suite, judge):
    task = make_suite().get("scale_check")
    result = _judge(judge, task, open(task.reference).read())
    assert result.correct and "weak_test" in result.flags


def test_a_task_the_interpreter_cannot_run_is_skipped_with_its_reason(make_suite, judge,
                                                                       copy_of_tasks):
    path = copy_of_tasks / "relu_kernel.py"
    path.write_text(path.read_text().replace("out = torch.empty_like(x)",
                                             "out = torch.empty(x.shape, device='cuda')"))
    task = make_suite(copy_of_tasks).get("relu_kernel")
    result = _judge(judge, task, open(task.reference).read())
    assert "skipped" in result.flags and not result.correct
    assert "places tensors on 'cuda'" in result.reason


def _eval_command(tmp_path, records, *extra):
    import json
    import os
    import subprocess
    import sys

    candidates = tmp_path / "outputs.jsonl"
    candidates.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = tmp_path / "report.json"
    env = {**os.environ, "TRITON_INTERPRET": "1", "GEAK_TRITONBENCH_DATA": str(DATA)}
    done = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "eval", "--suite", "tritonbench", "--mode",
         "interpreter", "--workers", "1", "--candidates", str(candidates), "--out",
         str(report), *extra],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return {r["candidate"]: r for r in json.loads(report.read_text())}, done.stdout


def _reply(code):
    return f"Here is the implementation.\n```python\n{code}```\nIt launches one program per block."


def test_geak_core_eval_judges_geak_eval_records_on_the_cpu(make_suite, tmp_path):
    reference = open(make_suite().get("add_vectors").reference).read()
    records = [
        {"id": "right", "file": "add_vectors.py", "predict": _reply(reference)},
        {"id": "wrong", "file": "add_vectors.py",
         "predict": _reply(reference.replace("x + y", "x * y"))},
    ]
    verdicts, stdout = _eval_command(tmp_path, records)
    assert verdicts["right"]["correct"] and verdicts["right"]["mode"] == "interpreter"
    assert not verdicts["wrong"]["correct"] and verdicts["wrong"]["failed_stage"] == "stage1"
    assert "execution accuracy 50.0%" in stdout


def test_geak_core_eval_finds_the_task_of_a_labelled_record(make_suite, tmp_path):
    import json

    entries = json.loads((DATA_JSON).read_text())
    label = next(e["output"] for e in entries if e["file"] == "row_softmax.py")
    records = [{"instruction": "Write a softmax.", "label": label, "predict": _reply(label)}]
    verdicts, _ = _eval_command(tmp_path, records)
    assert [v["task"] for v in verdicts.values()] == ["row_softmax"]
    assert all(v["correct"] for v in verdicts.values())


def test_a_candidate_using_the_test_parts_import_is_judged_by_the_protocol_chosen(make_suite,
                                                                                  judge):
    published = make_suite().get("add_vectors")
    code = open(published.reference).read().replace("import torch\n", "", 1)
    result = _judge(judge, published, code)
    assert result.correct, result.reason
    strict = _judge(judge, make_suite(protocol="strict").get("add_vectors"), code)
    assert not strict.call_ok and strict.failed_stage == "run"
    assert "NameError" in (strict.reason or "") + (strict.error or "")


def test_geak_core_eval_reports_a_record_of_an_unusable_task_unjudged(tmp_path):
    import json

    entries = json.loads((DATA_JSON).read_text())
    label = next(e["output"] for e in entries if e["file"] == "bad_syntax.py")
    records = [{"instruction": "A broken task.", "label": label, "predict": _reply(label)}]
    verdicts, stdout = _eval_command(tmp_path, records)
    (verdict,) = verdicts.values()
    assert verdict["task"] == "bad_syntax" and not verdict["call_ok"]
    assert {"skipped", "unusable_task"} <= set(verdict["flags"])
    assert "syntax error" in verdict["reason"] and "SKIPPED" in stdout


def test_a_test_part_that_repeats_the_reference_calls_the_candidates_code(make_suite, judge, copy_of_tasks):
    """A task file whose test part repeats the reference's functions (as one release file
    does) would check only its own copy; the repeat is dropped, so a wrong candidate fails."""
    from tritonbench_paths import SEPARATOR

    add = (copy_of_tasks / "add_vectors.py").read_text()
    kernel, test = add.split(SEPARATOR + "\n")
    (copy_of_tasks / "add_repeated.py").write_text(kernel + SEPARATOR + "\n" + kernel + test)
    task = make_suite(copy_of_tasks.parent).get("add_repeated")
    assert [e.name for e in task.entry_points] == ["add_wrapper"]
    right = _judge(judge, task, kernel)
    assert right.correct, right.reason
    wrong = _judge(judge, task, kernel.replace("x + y", "x - y"))
    assert wrong.call_ok and not wrong.correct and wrong.failed_stage == "stage1"
