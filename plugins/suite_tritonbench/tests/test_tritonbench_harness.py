"""The TritonBench harness, run in this process on our own (trusted) fixture references.

The judge runs it in child processes; here each test imports a fixture
reference directly to check the harness's half of the contract.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
import torch
from geak_suite_tritonbench.harness import WEAK_TIMING_NOTE, Harness
from geak_suite_tritonbench.results import comparable, weak_result_reason
from geak_suite_tritonbench.rewrite import DEVICE_NAME, align_libdevice, rewrite_device_literals
from geak_suite_tritonbench.seeding import PROTOCOL_SEED, module_seeding_calls, seed_all
from geak_suite_tritonbench.suite import STRICT_SEEDS

_count = 0


def _import(path: str):
    global _count
    _count += 1
    spec = importlib.util.spec_from_file_location(f"_tritonbench_ref_{_count}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(task, case_name="test", seed=0, mode="small", module=None):
    harness = Harness(task)
    case = next(c for c in harness.cases(mode) if c.name == case_name)
    module = module or _import(task.reference)
    inputs = harness.make_inputs(case, seed, "cpu")
    outputs = harness.allocate(case, inputs)
    harness.run(module, case, inputs, outputs)
    return outputs["result"]


# -- cases ------------------------------------------------------------------


def test_small_mode_has_the_one_untimed_test_case(make_suite):
    cases = Harness(make_suite().get("relu_kernel")).cases("small")
    assert [(c.name, c.timed, c.outliers) for c in cases] == [("test", False, False)]


def test_without_a_perf_script_the_test_is_the_timed_case_with_a_weaker_note(make_suite):
    (case,) = Harness(make_suite().get("relu_kernel")).cases("full")
    assert case.timed and case.note == WEAK_TIMING_NOTE


def test_a_perf_script_gives_one_timed_case_per_input_with_flops_and_bytes(make_suite):
    cases = Harness(make_suite().get("add_vectors")).cases("full")
    assert [(c.name, c.timed) for c in cases] == [
        ("test", False), ("perf_0", True), ("perf_1", True), ("perf_2", True)
    ]
    perf = cases[1:]
    assert [c.flops for c in perf] == [16.0, 64.0, 256.0]  # numel FLOPs per the script
    assert [c.bytes for c in perf] == [192.0, 768.0, 3072.0]  # 3 * numel * 4 bytes
    assert {c.dtype for c in perf} == {"float32"}
    assert perf[0].params["inputs"] == [{"shape": [16], "dtype": "float32"}] * 2


def test_loading_a_perf_script_leaves_the_imported_module_names_as_they_were(make_suite):
    before = {n for n in sys.modules if n.startswith(("geak_eval", "TritonBench_v1"))}
    Harness(make_suite().get("add_vectors")).cases("full")
    assert {n for n in sys.modules if n.startswith(("geak_eval", "TritonBench_v1"))} == before


# -- running the test -------------------------------------------------------


def test_run_returns_what_the_test_returns_computed_by_the_module(make_suite):
    result = _run(make_suite().get("add_vectors"), seed=3)
    torch.manual_seed(3)
    x7, y7 = torch.randn(7), torch.randn(7)
    assert set(result) == {"n7", "n100"}
    torch.testing.assert_close(result["n7"], x7 + y7)


def test_the_same_seed_gives_the_same_result_in_separately_imported_modules(make_suite):
    task = make_suite().get("row_softmax")
    first, second = _run(task, seed=1), _run(task, seed=1)
    torch.testing.assert_close(first["float32"]["wide"], second["float32"]["wide"])


def test_another_seed_gives_other_inputs(make_suite):
    task = make_suite().get("relu_kernel")
    assert not torch.equal(_run(task, seed=0)[0], _run(task, seed=1)[0])


def test_nested_results_keep_their_structure_and_shapes_become_tuples(make_suite):
    result = _run(make_suite().get("row_softmax"))
    assert set(result) == {"float32", "shape"} and result["shape"] == (4, 10)
    torch.testing.assert_close(result["float32"]["small"].sum(dim=1), torch.ones(4))


def test_a_test_without_result_line_is_called_directly(make_suite):
    matrix, total = _run(make_suite().get("tiny_matmul"))
    assert matrix.shape == (20, 18) and isinstance(total, float)


def test_an_autograd_function_entry_point_runs(make_suite):
    result = _run(make_suite().get("square_fn"))
    assert len(result["twice"]) == 2 and (result["square"] >= 0).all()


def test_a_perf_case_runs_the_scripts_call_on_its_input(make_suite):
    task = make_suite().get("add_vectors")
    harness = Harness(task)
    case = harness.cases("full")[2]
    inputs = harness.make_inputs(case, 5, "cpu")
    outputs = harness.allocate(case, inputs)
    harness.run(_import(task.reference), case, inputs, outputs)
    assert set(inputs) == {"seed", "arg0", "arg1"} and inputs["arg0"].shape == (64,)
    torch.testing.assert_close(outputs["result"], inputs["arg0"] + inputs["arg1"])


def test_the_test_part_overrides_a_test_function_the_module_defines(make_suite):
    task = make_suite().get("relu_kernel")
    module = _import(task.reference)
    module.test_relu = lambda: [torch.zeros(1)]  # a candidate answering the test itself
    assert _run(task, module=module)[0].shape == (50,)


# -- weak results -----------------------------------------------------------


def test_a_result_of_only_booleans_and_shapes_is_weak(make_suite):
    task = make_suite().get("scale_check")
    result = _run(task)
    reason = Harness(task).weak_result_reason(result)
    assert reason and "only 1 boolean, 1 integer" in reason


@pytest.mark.parametrize("result", [None, {}, [], {"a": True}, (torch.Size([2, 3]),),
                                    {"n": 3, "s": "x"}, torch.tensor(True), torch.empty(0)])
def test_results_without_values_are_weak(result):
    assert weak_result_reason(result) is not None


@pytest.mark.parametrize("result", [torch.ones(3), {"a": [1, torch.zeros(2, 2)]}, 0.25,
                                    np.ones(2), torch.tensor([True, False]), torch.tensor(2.0)])
def test_results_with_values_are_not_weak(result):
    assert weak_result_reason(result) is None


def test_comparable_results_use_only_structures_the_judge_compares():
    value = comparable({1: np.arange(3), "s": torch.Size([2]), "d": torch.float16,
                        "g": np.float32(0.5), "set": {2, 1}})
    assert set(value) == {"1", "s", "d", "g", "set"}
    assert isinstance(value["1"], torch.Tensor) and value["s"] == (2,)
    assert value["d"] == "torch.float16" and value["g"] == 0.5 and value["set"] == [1, 2]


# -- adapting code to the device --------------------------------------------


def test_cuda_literals_and_cuda_calls_become_the_device_variable_on_the_same_lines():
    source = "x = torch.ones(3, device='cuda')\ny = t.cuda()\nz = torch.device(\"cuda:0\")\n"
    rewritten, count = rewrite_device_literals(source)
    assert count == 3
    assert rewritten.splitlines() == [
        f"x = torch.ones(3, device={DEVICE_NAME})",
        f"y = t.to({DEVICE_NAME})",
        f"z = torch.device({DEVICE_NAME})",
    ]


def test_other_strings_and_names_are_left_alone():
    source = "s = 'cudagraph'\nu = 'cuda is fast'\ntorch.cuda.synchronize()\nx.cuda(1)\n"
    assert rewrite_device_literals(source) == (source, 0)


def test_libdevice_of_the_other_backend_resolves_to_this_backends(monkeypatch):
    import triton.language as tl

    for name in ("triton.language.extra.hip.libdevice", "triton.language.extra.cuda.libdevice"):
        monkeypatch.setitem(sys.modules, name, sys.modules[name])
    for package in (tl.extra.hip, sys.modules["triton.language.extra.hip"]):
        monkeypatch.setattr(package, "libdevice", package.libdevice)
    hip_libdevice, cuda_libdevice = tl.extra.hip.libdevice, tl.extra.cuda.libdevice
    namespace = {"libdevice": hip_libdevice, "exp": hip_libdevice.exp, "other": 1}

    assert align_libdevice(namespace, "cuda") == 2
    assert namespace["libdevice"] is cuda_libdevice and namespace["exp"] is cuda_libdevice.exp
    assert tl.extra.hip.libdevice is cuda_libdevice
    assert sys.modules["triton.language.extra.hip.libdevice"] is cuda_libdevice


class _MonitoringProxy:
    """Like the judge's wrapper: entry points replaced, everything else forwarded."""

    def __init__(self, module, name):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "calls", [])
        original = getattr(module, name)

        def watched(*args, **kwargs):
            self.calls.append(name)
            return original(*args, **kwargs)

        object.__setattr__(self, "_wrapped", {name: watched})

    def __getattr__(self, name):
        wrapped = object.__getattribute__(self, "_wrapped")
        return wrapped[name] if name in wrapped else getattr(self._module, name)

    def __dir__(self):
        return dir(self._module)


def test_the_test_calls_the_entry_points_the_judge_hands_over(make_suite):
    task = make_suite().get("row_softmax")
    module = _import(task.reference)
    sys.modules[module.__name__] = module
    try:
        proxy = _MonitoringProxy(module, "softmax")
        result = _run(task, module=proxy)
    finally:
        del sys.modules[module.__name__]
    assert proxy.calls == ["softmax"] * 3
    assert result["shape"] == (4, 10)


def test_a_wrapper_not_registered_as_a_module_still_gets_a_namespace(make_suite):
    task = make_suite().get("relu_kernel")
    proxy = _MonitoringProxy(_import(task.reference), "relu")
    assert _run(task, module=proxy)[0].shape == (50,) and proxy.calls == ["relu", "relu"]


def test_the_weak_check_also_accepts_the_whole_outputs_dict():
    assert weak_result_reason({"result": {"ok": True}}) is not None
    assert weak_result_reason({"result": {"out": torch.ones(2)}}) is None


# -- the published protocol and the strict one --------------------------------


def _module_from(tmp_path, code: str):
    global _count
    _count += 1
    path = tmp_path / f"candidate_{_count}.py"
    path.write_text(code)
    return _import(str(path))


def _without_torch_import(task) -> str:
    code = open(task.reference).read()
    assert code.startswith("import torch\n")
    return code.replace("import torch\n", "", 1)  # the wrapper still calls torch.empty_like


def test_published_a_candidate_may_use_a_name_only_the_test_part_imports(make_suite, tmp_path):
    task = make_suite().get("add_vectors")
    module = _module_from(tmp_path, _without_torch_import(task))
    result = _run(task, module=module)
    assert set(result) == {"n7", "n100"} and result["n7"].shape == (7,)
    assert module.torch is torch and task.extra["test_function"] in vars(module)


def test_strict_the_test_parts_names_stay_out_of_the_candidates_namespace(make_suite, tmp_path):
    task = make_suite(protocol="strict").get("add_vectors")
    module = _module_from(tmp_path, _without_torch_import(task))
    with pytest.raises(NameError, match="torch"):
        _run(task, module=module)
    assert "torch" not in vars(module)


def test_published_the_entry_points_of_the_module_stay_its_own(make_suite):
    task = make_suite().get("row_softmax")
    module = _import(task.reference)
    own = module.softmax
    sys.modules[module.__name__] = module
    try:
        proxy = _MonitoringProxy(module, "softmax")
        _run(task, module=proxy)
    finally:
        del sys.modules[module.__name__]
    assert proxy.calls == ["softmax"] * 3 and module.softmax is own


def test_published_tasks_are_judged_with_the_protocols_seed(make_suite):
    task = make_suite().get("add_vectors")
    assert task.seeds == (PROTOCOL_SEED,) and task.extra["protocol_seed"] == PROTOCOL_SEED
    strict = make_suite(protocol="strict").get("add_vectors")
    assert strict.seeds == STRICT_SEEDS and strict.extra["protocol_seed"] is None


def test_published_the_tests_inputs_are_those_of_the_protocols_seed(make_suite):
    result = _run(make_suite().get("relu_kernel"), seed=PROTOCOL_SEED)
    torch.manual_seed(PROTOCOL_SEED)
    torch.testing.assert_close(result[0], torch.randn(50).clamp(min=0))


def test_published_a_module_level_seed_of_the_module_replaces_the_cases_seed(make_suite,
                                                                             tmp_path):
    task = make_suite().get("relu_kernel")
    module = _module_from(tmp_path, open(task.reference).read() + "\ntorch.manual_seed(1234)\n")
    torch.manual_seed(1234)
    expected = torch.randn(50).clamp(min=0)
    for seed in (PROTOCOL_SEED, 7):
        torch.testing.assert_close(_run(task, seed=seed, module=module)[0], expected)


def test_strict_a_module_level_seed_does_not_decide_the_inputs(make_suite, tmp_path):
    task = make_suite(protocol="strict").get("relu_kernel")
    module = _module_from(tmp_path, open(task.reference).read() + "\ntorch.manual_seed(1234)\n")
    assert not torch.equal(_run(task, seed=0, module=module)[0],
                           _run(task, seed=1, module=module)[0])


def test_module_level_seeding_calls_with_literal_seeds_are_found_in_order():
    source = (
        "import torch, random\nimport numpy as np\ntorch.manual_seed(1234)\n"
        "def f():\n    torch.manual_seed(5)\nnp.random.seed(3)\nrandom.seed(SEED)\n"
        "torch.cuda.manual_seed_all(9)\n"
    )
    assert module_seeding_calls(source) == [("torch", 1234), ("numpy", 3), ("torch.cuda", 9)]


def test_published_performance_inputs_are_timing_only_cases(make_suite):
    cases = Harness(make_suite().get("add_vectors")).cases("full")
    assert [(c.name, c.timed, c.checked) for c in cases] == [
        ("test", False, True), ("perf_0", True, False), ("perf_1", True, False),
        ("perf_2", True, False),
    ]
    assert "timed only" in cases[1].note


def test_strict_performance_inputs_are_compared_too(make_suite):
    cases = Harness(make_suite(protocol="strict").get("add_vectors")).cases("full")
    assert [c.checked for c in cases] == [True] * 4


def test_seed_all_draws_what_the_generators_seeded_by_torch_draw():
    import random

    seed_all(77)
    ours = (random.random(), np.random.rand(), torch.rand(4), torch.randint(0, 1000, (4,)))
    random.seed(77)
    np.random.seed(77)
    torch.manual_seed(77)
    theirs = (random.random(), np.random.rand(), torch.rand(4), torch.randint(0, 1000, (4,)))
    assert ours[:2] == theirs[:2]
    assert torch.equal(ours[2], theirs[2]) and torch.equal(ours[3], theirs[3])


def test_prefetch_draws_a_perf_scripts_inputs_once_for_the_later_make_inputs(make_suite, monkeypatch):
    harness = Harness(make_suite().get("add_vectors"))
    cases = harness.cases("full")
    perf = [c for c in cases if "perf_index" in c.params]
    script = harness._script()
    draws: list[int] = []
    original = script.inputs
    monkeypatch.setattr(script, "inputs", lambda seed: draws.append(seed) or original(seed))
    harness.prefetch(cases[0], 7)  # the test case: nothing to draw ahead
    assert draws == []
    for case in perf:
        harness.prefetch(case, 7)
    assert draws == [7]
    first = harness.make_inputs(perf[1], 7, "cpu")
    assert draws == [7]  # make_inputs used what prefetch drew
    fresh = Harness(make_suite().get("add_vectors"))
    torch.testing.assert_close(first["arg0"], fresh.make_inputs(fresh.cases("full")[2], 7, "cpu")["arg0"])
    assert perf[1] == cases[2]


def test_a_seed_used_again_stays_among_the_perf_inputs_kept(make_suite, monkeypatch):
    from geak_suite_tritonbench.harness import PERF_SEEDS_KEPT

    harness = Harness(make_suite().get("add_vectors"))
    case = next(c for c in harness.cases("full") if "perf_index" in c.params)
    script = harness._script()
    draws: list[int] = []
    original = script.inputs
    monkeypatch.setattr(script, "inputs", lambda seed: draws.append(seed) or original(seed))
    for seed in range(PERF_SEEDS_KEPT):
        harness.prefetch(case, seed)
    harness.prefetch(case, 0)  # the oldest, used again: now the newest
    harness.prefetch(case, 100)  # evicts seed 1, not seed 0
    harness.make_inputs(case, 0, "cpu")
    assert draws == [*range(PERF_SEEDS_KEPT), 100]
    harness.make_inputs(case, 1, "cpu")
    assert draws[-1] == 1
