"""Outputs are checked as objects, not only as values (checks/output_objects.py).

The judge's allocated buffers must stay the plain tensors it allocated, on the same memory;
what an entry point returns must be plain tensors and values, read without running any of
the candidate's code.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

OBJECT_CHEATS = {
    # cheat: words its rejection names
    "add_repoint_set": "data pointer, storage changed",
    "add_repoint_data": "data pointer, storage changed",
    "add_output_view": "storage offset changed",
    "add_class_swap": "its class was changed",
    "scale_returns_subclass": "_Deferred, not a plain torch.Tensor",
    "scale_lazy_wrapper": "_Pending, not a plain torch.Tensor",
}


# -- the check itself, in this process ---------------------------------------------------


def _allocated():

    return {"out": torch.full((8,), float("nan")), "pair": (torch.zeros(2, 3), torch.zeros(4))}


def test_honest_outputs_are_settled_to_plain_aliases_of_the_same_memory():
    from geak_evaluator_triton.checks.output_objects import record, settle

    outputs = _allocated()
    allocation = record(outputs)
    outputs["out"].fill_(1.0)
    outputs["result"] = {"sum": torch.ones(3), "rows": 3, "names": ["a", None], "dtype": torch.float16}
    plain, problems = settle(outputs, allocation)
    assert problems == []
    assert type(plain["out"]) is torch.Tensor and plain["out"] is not outputs["out"]
    assert plain["out"].data_ptr() == outputs["out"].data_ptr()
    assert torch.equal(plain["out"], torch.ones(8))
    assert plain["result"]["rows"] == 3 and plain["result"]["names"] == ["a", None]


@pytest.mark.parametrize("change, words", [
    (lambda t, pool: t.set_(torch.ones(8)), "data pointer, storage changed"),
    (lambda t, pool: setattr(t, "data", torch.ones(8)), "data pointer, storage changed"),
    (lambda t, pool: t.set_(pool.untyped_storage(), 4, (8,), (1,)), "data pointer, storage offset changed"),
    (lambda t, pool: t.set_(pool.untyped_storage(), 0, (4, 2), (2, 1)), "shape, strides changed"),
])
def test_a_repointed_allocated_output_is_named_with_what_changed(change, words):
    from geak_evaluator_triton.checks.output_objects import record, settle

    pool = torch.zeros(64)
    outputs = {"out": pool[:8], "pair": (torch.zeros(2, 3), torch.zeros(4))}  # out: the pool's start
    allocation = record(outputs)
    change(outputs["out"], pool)
    plain, problems = settle(outputs, allocation)
    assert len(problems) == 1 and "output 'out'" in problems[0] and words in problems[0], problems
    assert plain["out"] is None
    assert type(plain["pair"][0]) is torch.Tensor  # the untouched outputs are still read


def test_subclasses_and_lookalikes_are_rejected_without_running_their_code():
    from geak_evaluator_triton.checks.output_objects import record, settle

    ran: list[str] = []

    class Spy(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            ran.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    class LooksLikeATensor:
        @property
        def __class__(self):
            ran.append("__class__")
            return torch.Tensor

        def __getattr__(self, name):
            ran.append(name)
            raise AttributeError(name)

    outputs = _allocated()
    allocation = record(outputs)
    outputs["pair"][1].__class__ = Spy
    outputs["result"] = [torch.Tensor._make_subclass(Spy, torch.zeros(2)), LooksLikeATensor()]
    plain, problems = settle(outputs, allocation)
    assert ran == []
    assert plain["pair"][1] is None and plain["result"] == [None, None]
    assert "output 'pair[1]' is a" in problems[0] and "its class was changed" in problems[0]
    assert "output 'result[0]' is a" in problems[1] and "Spy, not a plain torch.Tensor" in problems[1]
    assert "output 'result[1]' is a" in problems[2] and "LooksLikeATensor, not a plain" in problems[2]


def test_a_method_set_on_the_output_object_is_never_what_the_judge_calls():
    from geak_evaluator_triton.checks.output_objects import record, settle

    outputs = _allocated()
    allocation = record(outputs)
    outputs["out"].detach = lambda: torch.ones(8)  # read back through the object: a fake answer
    plain, problems = settle(outputs, allocation)
    assert problems == []
    assert torch.isnan(plain["out"].detach()).all()


def test_a_replaced_or_missing_buffer_and_a_mode_left_active_are_named():
    from geak_evaluator_triton.checks.output_objects import record, settle
    from torch.overrides import TorchFunctionMode

    outputs = _allocated()
    allocation = record(outputs)
    outputs["out"] = torch.ones(8)
    del outputs["pair"]
    mode = TorchFunctionMode()
    mode.__enter__()
    try:
        _, problems = settle(outputs, allocation)
    finally:
        mode.__exit__(None, None, None)
    text = " | ".join(problems)
    assert "torch function mode active" in text
    assert "output 'out' is not the buffer the judge allocated" in text
    assert "output 'pair[0]', allocated by the judge, is gone" in text


# -- the judge, under the interpreter ----------------------------------------------------


@pytest.fixture(scope="module")
def object_verdicts(judge, mini_tasks):
    from pathlib import Path

    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate
    from judge_support import cheat_code

    jobs = [EvalJob(mini_tasks[name.split("_")[0]], Candidate(id=name, task_id=name.split("_")[0],
                                                              code=cheat_code(name)))
            for name in OBJECT_CHEATS]
    jobs += [EvalJob(mini_tasks[task], Candidate(id=f"honest:{task}", task_id=task,
                                                 code=Path(mini_tasks[task].reference).read_text()))
             for task in ("add", "scale", "stats")]
    return {job.candidate.id: result for job, result in judge.evaluate_many(jobs)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OBJECT_CHEATS))
def test_each_spelling_of_an_output_object_cheat_is_rejected(object_verdicts, name):
    result = object_verdicts[name]
    assert not result.correct, f"{name} was accepted"
    assert "judge_error" not in result.flags, result.reason
    assert result.failed_stage == "anticheat", result.reason
    assert "outputs are not plain results" in result.reason
    assert OBJECT_CHEATS[name] in result.reason, result.reason


@pytest.mark.slow
@pytest.mark.parametrize("task", ["add", "scale", "stats"])
def test_honest_outputs_are_still_accepted(object_verdicts, task):
    result = object_verdicts[f"honest:{task}"]
    assert result.correct, result.reason
