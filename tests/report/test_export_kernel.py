"""``geak-core export-kernel``: a stored run's best kernel for a KernelBench-format task as an
installable package around a PyTorch custom op.

The run is written through the run store's own API: a suite of KernelBench-format files
(registered here as ``kbfiles``), candidates that are real Triton ``ModelNew`` modules and
verdicts as the judge stores them. The package is then installed into a virtualenv of its
own and its tests run there, under Triton's interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import EntryPoint, Task, lookup_task
from geak_core.cli import main
from geak_core.engine.plugins import PluginManager, reset_plugin_manager
from geak_core.engine.store import RunStore
from geak_core.reporting.kernel_package import op_name

from tests.support.venvs import install_and_run_its_tests

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SCALE_BIAS = "7_Scale_Bias_ReLU"
RELU = "19_ReLU"
PLAIN = "plain"  # a task of the suite that is not in KernelBench's format
UNSOLVED = "23_Softmax"  # a KernelBench task with no correct candidate

REFERENCES = {
    SCALE_BIAS: '''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            """y = x * scale + bias, and relu(y)."""

            def __init__(self, features):
                super().__init__()
                self.bias = nn.Parameter(torch.randn(features))

            def forward(self, x, scale):
                y = x * scale + self.bias
                return y, torch.relu(y)


        def get_inputs():
            return [torch.randn(4, 32), 2.0]


        def get_init_inputs():
            return [32]
        ''',
    RELU: '''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x)


        def get_inputs():
            return [torch.randn(8, 16)]


        def get_init_inputs():
            return []
        ''',
    UNSOLVED: '''
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)


        def get_inputs():
            return [torch.randn(4, 16)]


        def get_init_inputs():
            return []
        ''',
}

SCALE_BIAS_KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_bias_relu_kernel(x_ptr, bias_ptr, y_ptr, z_ptr, scale, n_cols, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(bias_ptr + offs % n_cols, mask=mask)
    y = x * scale + b
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(z_ptr + offs, tl.maximum(y, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(features))

    def forward(self, x, scale):
        x = x.contiguous()
        y, z = torch.empty_like(x), torch.empty_like(x)
        n = x.numel()
        scale_bias_relu_kernel[(triton.cdiv(n, 128),)](x, self.bias, y, z, scale, self.bias.numel(), n,
                                                       BLOCK=128)
        return y, z
'''
# judged correct, but slower than SCALE_BIAS_KERNEL: the export must not pick it
SLOWER_KERNEL = SCALE_BIAS_KERNEL.replace("BLOCK=128", "BLOCK=32").replace(", 128)", ", 32)")
RELU_KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out
'''
MANIFEST = {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.7.1+cu126", "triton": "3.3.1", "python": "3.11.7"}
DEVICE = "NVIDIA H100 80GB HBM3"


@dataclass
class KbFilesOptions:
    path: str = field(default="", metadata={"path": True, "help": "folder of KernelBench-format files"})


class KbFilesSuite:
    """Every ``*.py`` of a folder as a KernelBench-format task, and one task that is not."""

    def __init__(self, options: KbFilesOptions) -> None:
        tasks = [Task(suite="kbfiles", id=f.stem, instruction="Write ModelNew.", harness="m:H",
                      entry_points=[EntryPoint("ModelNew", kind="function")], reference=str(f),
                      tolerances={"float32": [1e-5, 1e-5]},
                      extra={"format": "kernelbench", "file": str(f)})
                 for f in sorted(Path(options.path).glob("*.py"))]
        tasks.append(Task(suite="kbfiles", id=PLAIN, instruction="add", harness="m:H",
                          entry_points=[EntryPoint("add_kernel")]))
        self._tasks = {t.id: t for t in tasks}

    def tasks(self) -> list[Task]:
        return list(self._tasks.values())

    def get(self, task_id: str) -> Task:
        return lookup_task("kbfiles", self._tasks, task_id)


class KbFilesPlugin:
    @hookimpl
    def geak_register_suites(self, register):
        register("kbfiles", KbFilesSuite, options=KbFilesOptions)


def _verdict(task_id: str, candidate_id: str, correct: bool, speedup: float | None = None) -> EvalResult:
    if not correct:
        return EvalResult(task_id=task_id, candidate_id=candidate_id, failed_stage="run",
                          reason="stage1 raised IndexError", device=DEVICE, mode="gpu")
    return EvalResult(task_id=task_id, candidate_id=candidate_id, call_ok=True, correct=True,
                      speedup=speedup, speedup_method="mean_ratio",
                      speedup_vs_eager=speedup * 1.5 if speedup else None,
                      performance_measured=speedup is not None, device=DEVICE, mode="gpu")


def make_run(output_dir: Path, references: Path, solved: tuple[str, ...] = (SCALE_BIAS, RELU)) -> Path:
    """A finished run over the ``kbfiles`` suite: for each task, a failing candidate, then (for
    the ``solved`` ones) correct ones. Returns the run folder."""
    recipe = textwrap.dedent(f"""\
        [run]
        name = "kernels"

        [llm]
        backend = "openai"
        model = "gpt-test"

        [suite]
        name = "kbfiles"
        path = "{references}"
        """)
    store = RunStore.create(output_dir, "kernels", recipe, MANIFEST)
    codes = {SCALE_BIAS: [(SCALE_BIAS_KERNEL, 1.8), (SLOWER_KERNEL, 1.2)], RELU: [(RELU_KERNEL, None)]}
    for task_id in (SCALE_BIAS, RELU, UNSOLVED, PLAIN):
        broken = Candidate(f"{task_id}/L0/I0", task_id, "import torch\nclass ModelNew: pass\n", 0, 0)
        store.record_candidate(broken)
        store.record_evaluation(broken, _verdict(task_id, broken.id, False))
        if task_id not in solved:
            continue
        for lineage, (code, speedup) in enumerate(codes.get(task_id, [(RELU_KERNEL, None)])):
            # the faster one comes from lineage 0's fix, the slower from lineage 1's first try
            candidate = Candidate(f"{task_id}/L{lineage}/I{1 - lineage}", task_id, code, lineage, 1 - lineage,
                                  origin="reflect" if lineage == 0 else "generate")
            store.record_candidate(candidate)
            store.record_evaluation(candidate, _verdict(task_id, candidate.id, True, speedup))
    store.set_meta("status", "finished")
    store.close()
    return store.dir


@pytest.fixture
def kb_run(tmp_path) -> Path:
    """The CLI's plugins with the ``kbfiles`` suite, and a run over it."""
    reset_plugin_manager(PluginManager(extra_plugins=[("kbfiles", KbFilesPlugin())]))
    references = tmp_path / "references"
    references.mkdir()
    for task_id, text in REFERENCES.items():
        (references / f"{task_id}.py").write_text(textwrap.dedent(text).lstrip())
    return make_run(tmp_path / "runs", references)


def export(*args: str):
    return CliRunner().invoke(main, ["export-kernel", *args])


def test_the_package_holds_the_best_kernel_its_reference_op_tests_benchmark_and_provenance(kb_run, tmp_path):
    out = tmp_path / "scale_op"
    result = export(str(kb_run), "--task", SCALE_BIAS, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "torch.ops.geak.scale_bias_relu" in result.output
    package = out / "geak_scale_bias_relu"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "README.md", "geak_scale_bias_relu/__init__.py", "geak_scale_bias_relu/benchmark.py",
        "geak_scale_bias_relu/kernel.py", "geak_scale_bias_relu/op.py",
        "geak_scale_bias_relu/provenance.json", "geak_scale_bias_relu/reference.py",
        "pyproject.toml", "tests/test_geak_scale_bias_relu.py",
    ]
    # the fastest correct candidate, verbatim; the reference as the suite has it
    assert (package / "kernel.py").read_text() == SCALE_BIAS_KERNEL
    assert (package / "reference.py").read_text() == textwrap.dedent(REFERENCES[SCALE_BIAS]).lstrip()
    op = (package / "op.py").read_text()
    assert "SCHEMA = '(Tensor x, float scale, Tensor[] weights, int config=0) -> (Tensor, Tensor)'" in op
    assert "torch.library.custom_op(QUALNAME, _kernel, mutates_args=(), schema=SCHEMA)" in op
    assert "op.register_fake(_fake)" in op
    assert "def forward(self, x, scale):" in op
    for path in out.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")  # every generated module is Python

    prov = json.loads((package / "provenance.json").read_text())
    assert {k: prov[k] for k in ("op", "run_id", "task", "candidate_id", "model", "gpu", "torch", "triton")} == {
        "op": "geak::scale_bias_relu", "run_id": kb_run.name, "task": SCALE_BIAS,
        "candidate_id": f"{SCALE_BIAS}/L0/I1", "model": "gpt-test", "gpu": MANIFEST["gpu"],
        "torch": MANIFEST["torch"], "triton": MANIFEST["triton"],
    }
    assert prov["verdict"]["correct"] is True
    assert prov["verdict"]["speedup"] == 1.8 and prov["verdict"]["speedup_vs_eager"] == pytest.approx(2.7)

    readme = (out / "README.md").read_text()
    for text in ("torch.ops.geak.scale_bias_relu", f"| candidate | {SCALE_BIAS}/L0/I1 |", "| model | gpt-test |",
                 "| speedup | 1.8 (mean_ratio) |", f"| run | {kb_run.name} |", "float32 atol 1e-05 rtol 1e-05"):
        assert text in readme

    project = tomllib.loads((out / "pyproject.toml").read_text())["project"]
    assert project["name"] == "geak-scale-bias-relu"
    assert project["dependencies"] == ["torch>=2.4,<3", "triton>=3.0,<4"]  # ranges, no geak-core
    test = (out / "tests" / "test_geak_scale_bias_relu.py").read_text()
    assert "TOLERANCES = {" in test and "'float32': (1e-05, 1e-05)" in test and "'float16': (0.01, 0.01)" in test


def test_a_single_output_gives_a_tensor_and_the_names_can_be_chosen(kb_run, tmp_path):
    out = tmp_path / "relu"
    result = export(str(kb_run), "--task", RELU, "-o", str(out), "--namespace", "mine", "--name", "fast_relu")
    assert result.exit_code == 0, result.output
    op = (out / "mine_fast_relu" / "op.py").read_text()
    assert "SCHEMA = '(Tensor x, Tensor[] weights, int config=0) -> Tensor'" in op
    assert "QUALNAME = f\"{NAMESPACE}::{NAME}\"" in op and "NAME = 'fast_relu'" in op
    assert json.loads((out / "mine_fast_relu" / "provenance.json").read_text())["verdict"]["speedup"] is None


def test_the_task_may_be_left_out_when_one_task_has_a_correct_candidate(kb_run, tmp_path):
    one = make_run(tmp_path / "one", kb_run.parent.parent / "references", solved=(RELU,))
    result = export(str(one), "-o", str(tmp_path / "relu"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "relu" / "geak_relu" / "kernel.py").read_text() == RELU_KERNEL


def test_an_existing_folder_is_replaced_only_with_force(kb_run, tmp_path):
    out = tmp_path / "op"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    refused = export(str(kb_run), "--task", RELU, "-o", str(out))
    assert refused.exit_code == 2 and (out / "mine.txt").exists()
    forced = export(str(kb_run), "--task", RELU, "-o", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert not (out / "mine.txt").exists() and (out / "geak_relu" / "op.py").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".op")] == []  # no staging left


@pytest.mark.parametrize("args, message", [
    (["no-such-run"], "error: no run 'no-such-run'"),
    (["{run}", "--task", "19_Relu"], "error: run {run_id} has no task '19_Relu' (did you mean '19_ReLU'?)"),
    (["{run}"], "error: run {run_id} has 2 tasks with a correct candidate (19_ReLU, 7_Scale_Bias_ReLU): "
                "choose one with --task"),
    (["{run}", "--task", UNSOLVED], f"error: task '{UNSOLVED}' of run {{run_id}} has no correct candidate "
                                    "(1 candidate judged): nothing to export"),
    (["{run}", "--task", PLAIN], "error: task kbfiles/plain is not in KernelBench format"),
    (["{run}", "--task", RELU, "--candidate", f"{RELU}/L0/I0"], f"error: candidate {RELU}/L0/I0 is not correct"),
    (["{run}", "--task", RELU, "--name", "1relu"], "error: op name '1relu' is not a Python identifier"),
    (["{run}", "--task", RELU, "--namespace", "aten"], "error: namespace 'aten' is torch's own"),
    (["{run}", "--task", RELU, "-o", "{busy}"], "error: {busy} exists and is not empty (--force replaces"),
])
def test_bad_input_is_one_line_and_exit_status_2(kb_run, tmp_path, args, message):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    fill = {"run": str(kb_run), "run_id": kb_run.name, "busy": str(busy)}
    argv = [a.format(**fill) for a in args]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "out")]
    result = export(*argv, "--output-dir", str(kb_run.parent))
    assert result.exit_code == 2, result.output
    # stdout and stderr together (click 8.1 mixes them): the error's one line, nothing else
    assert result.output.startswith(message.format(**fill)), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_op_names_come_from_task_ids():
    assert op_name("19_ReLU") == "relu"
    assert op_name("1_Square_matrix_multiplication_") == "square_matrix_multiplication"
    assert op_name("softmax-v2") == "softmax_v2"
    assert op_name("42") == "task_42"
    assert op_name("3_class") == "class_"


@pytest.mark.slow
def test_the_package_installs_into_a_fresh_virtualenv_and_its_tests_pass(kb_run, tmp_path):
    out = tmp_path / "scale_op"
    assert export(str(kb_run), "--task", SCALE_BIAS, "-o", str(out)).exit_code == 0
    python, output = install_and_run_its_tests(out, "geak_scale_bias_relu", tmp_path)
    assert "7 passed" in output, output
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TRITON_INTERPRET"] = "1"
    bench = subprocess.run([str(python), "-m", "geak_scale_bias_relu.benchmark"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=120)
    assert bench.returncode == 1 and "needs a GPU" in bench.stderr
