"""Optional abilities of components: declared once by each kind's base class, never probed."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from geak_core.api.components import EvaluatorBase, SuiteBase, as_component
from geak_core.api.errors import PluginError
from geak_core.api.hookspecs import hookimpl
from geak_core.api.model import EvalResult
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.plugins import PluginManager

ROOT = Path(__file__).resolve().parents[2]
PROBED = ("core/geak_core", "plugins/executor_ray")
PROBE = re.compile(r"\b(getattr|hasattr)\(")
# Uses of getattr/hasattr that are not probes of a component's abilities, with why.
ALLOWED = {
    "core/geak_core/cli/__init__.py": "the signal and faulthandler modules of this platform",
    "core/geak_core/kit/limits.py": "the resource module of this platform",
    "core/geak_core/engine/recipe.py": "options dataclasses and TOML errors, read by field name",
    "core/geak_core/engine/plugins.py": "entry-point metadata, and pluggy hooks by name",
    "core/geak_core/api/harness.py": "torch dtypes by name and Triton's autotuner/heuristics objects",
    "core/geak_core/kit/code_metrics.py": "radon's block types",
    "core/geak_core/kit/sandbox.py": "stream types, fcntl constants and a harness named by import path",
    "core/geak_core/kit/tensorio.py": "torch dtypes by name",
    "core/geak_core/reporting/html_report.py": "summary fields by name",
    "core/geak_core/api/tasks.py": "device properties and Triton's version",
    "core/geak_core/engine/hardware.py": "torch's device properties (gcnArchName exists on ROCm only)",
    "core/geak_core/api/components.py": "the one wrapper that fills defaults delegates by name",
    "plugins/executor_ray/geak_executor_ray/judges.py": "Ray's exception classes, by name",
}


def _component(**members):
    return SimpleNamespace(**members)  # a third-party object written against the protocol alone


def test_no_component_ability_is_probed_with_getattr_or_hasattr():
    found = {}
    for folder in PROBED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/tests/" in relative:
                continue
            lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if PROBE.search(line)]
            if lines and relative not in ALLOWED:
                found[relative] = lines
    assert found == {}


def test_every_allowed_file_still_needs_its_allowance():
    for relative in ALLOWED:
        assert PROBE.search((ROOT / relative).read_text()), relative


def test_an_evaluator_without_optional_abilities_gets_the_defaults():
    judged = []
    minimal = _component(evaluate=lambda task, cand: judged.append(cand) or EvalResult(task.id, "c"),
                         evaluate_many=lambda jobs: iter(()), close=lambda: None)
    evaluator = as_component("evaluator", minimal)
    assert isinstance(evaluator, EvaluatorBase)
    assert evaluator.max_parallel == 1
    assert evaluator.unmet_requirements(None) == []
    assert evaluator.judging() == []
    assert evaluator.set_hardware(None) is None
    task = Task(suite="s", id="t", instruction="", entry_points=[], harness="")
    assert evaluator.evaluate(task, "cand").task_id == "t"
    assert judged == ["cand"]


def test_an_evaluator_keeps_the_abilities_it_defines_without_subclassing():
    minimal = _component(evaluate=None, evaluate_many=None, close=None, max_parallel=6,
                         unmet_requirements=lambda task: ["no GPU"])
    evaluator = as_component("evaluator", minimal)
    assert evaluator.max_parallel == 6
    assert evaluator.unmet_requirements(None) == ["no GPU"]
    assert evaluator.judging() == []


def test_a_subclass_of_the_base_is_used_as_it_is():
    class Mine(EvaluatorBase):
        max_parallel = 3

    mine = Mine()
    assert as_component("evaluator", mine) is mine


def test_a_suite_without_optional_abilities_extracts_the_code_of_a_reply():
    task = Task(suite="hello", id="scale", instruction="", harness="",
                entry_points=[EntryPoint("scale_kernel", params=("x",))])
    suite = as_component("suite", _component(name="hello", description="", tasks=lambda: [task],
                                             get=lambda task_id: task))
    assert isinstance(suite, SuiteBase)
    assert suite.unusable() == {}
    assert suite.resolve_record({"file": "x.py"}) is None
    reply = "Here:\n```python\ndef scale_kernel(x):\n    return x\n```\n"
    assert "def scale_kernel" in suite.record_code({"predict": reply}, "scale")


def test_a_misspelt_ability_of_a_registered_class_is_an_error_at_registration():
    class Judge:
        max_paralel = 4

        def __init__(self, options=None):
            pass

    class Plugin:
        @hookimpl
        def geak_register_evaluators(self, register):
            register("typo", Judge)

    with pytest.raises(PluginError, match="'max_paralel' looks like the optional ability 'max_parallel'"):
        PluginManager(load_entry_points=False, extra_plugins=[("typo-plugin", Plugin())])


def test_a_misspelt_ability_set_on_the_instance_is_an_error_when_it_is_built():
    class Judge(EvaluatorBase):
        def __init__(self, options=None):
            self.unmet_requirement = lambda task: []

    class Plugin:
        @hookimpl
        def geak_register_evaluators(self, register):
            register("typo", lambda options: Judge(options))

    manager = PluginManager(load_entry_points=False, extra_plugins=[("typo-plugin", Plugin())])
    with pytest.raises(PluginError, match="evaluator 'typo' of plugin 'typo-plugin'.*'unmet_requirements'"):
        manager.build("evaluator", "typo")


def test_names_far_from_every_ability_are_not_taken_for_misspellings():
    component = _component(evaluate=None, evaluate_many=None, close=None, parallel_jobs=2,
                           requirements=[], hardware=None)
    assert as_component("evaluator", component).max_parallel == 1


def test_a_backend_without_max_concurrency_gets_four():
    backend = as_component("llm_backend", _component(identity=lambda: {}, complete=None))
    assert backend.max_concurrency == 4
