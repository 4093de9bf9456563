"""lookup_task: a suite's ``get`` with located, suggestive errors."""

from __future__ import annotations

import pytest
from geak_core.api.errors import InputError
from geak_core.api.tasks import Task, lookup_task

TASKS = {"softmax": Task(suite="demo", id="softmax", instruction="", entry_points=[], harness="m:C")}


def test_a_known_id_returns_its_task():
    assert lookup_task("demo", TASKS, "softmax") is TASKS["softmax"]


def test_an_unknown_id_suggests_the_closest():
    with pytest.raises(InputError, match=r"suite 'demo' has no task 'softmx' \(did you mean 'softmax'\?\)"):
        lookup_task("demo", TASKS, "softmx")


def test_an_unusable_id_gives_the_reason_it_could_not_load():
    with pytest.raises(InputError, match=r"demo task 'broken' is unusable: no separator line"):
        lookup_task("demo", TASKS, "broken", {"broken": "no separator line"})
