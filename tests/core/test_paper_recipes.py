"""The recipes of recipes/paper/: each passes `geak-core recipe check` once the data variables
it names are set, and without them fails naming every one. The variables point at the
suites' own test fixtures (no real benchmark data here) and the API key is a dummy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "recipes" / "paper"
RECIPES = sorted(PAPER.glob("*.toml"))
TRITONBENCH = ROOT / "plugins" / "suite_tritonbench" / "tests" / "fixtures" / "TritonBench" / "data"
KERNELBENCHX = ROOT / "plugins" / "suite_kernelbenchx" / "tests" / "fixtures" / "KernelBenchX"
SEPARATOR = "#" * 146


def named_variables(path: Path) -> set[str]:
    """The ``${NAME}`` a recipe reads, its includes' too."""
    text = path.read_text()
    names = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text))
    include = re.search(r'^include\s*=\s*"([^"]+)"', text, re.M)
    return names | (named_variables(path.parent / include[1]) if include else set())


@pytest.fixture
def data_variables(tmp_path) -> dict[str, str]:
    """A fixture for every data variable the paper recipes read."""
    from geak_suite_rocm.suite import REFERENCES

    originals = tmp_path / "ROCm_v1"  # GEAK-eval's layout: kernel, separator line, test part
    originals.mkdir()
    (originals / "test_add_kernel.py").write_text(
        (REFERENCES / "add_kernel.py").read_text() + SEPARATOR + "\nraise SystemExit('test part')\n")
    train = tmp_path / "TritonBench-train"  # TritonBench's data/ folder: its two training files
    train.mkdir()
    kernel = (REFERENCES / "add_kernel.py").read_text()
    for name in ("train_crawl", "train_synth"):
        (train / f"{name}.json").write_text(json.dumps([{"code": kernel, "file": f"{name}_add.py"}]))
    return {
        "GEAK_TRITONBENCH_DATA": str(TRITONBENCH),
        "GEAK_TRITONBENCH_JSON": str(TRITONBENCH / "TritonBench_G_v1.json"),
        "GEAK_TRITONBENCH_TRAIN": str(train),
        "GEAK_ROCM_BASELINE": str(originals),
        "GEAK_KERNELBENCHX_DATA": str(KERNELBENCHX),
    }


@pytest.fixture(autouse=True)
def environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")


def test_the_paper_recipes_are_there():
    assert {p.name for p in RECIPES} >= {
        "zero-shot-tritonbench.toml", "one-shot-tritonbench.toml", "geak-tritonbench.toml",
        "zero-shot-rocm.toml", "one-shot-rocm.toml", "geak-rocm.toml", "geak-kernelbenchx.toml"}


@pytest.mark.parametrize("recipe", RECIPES, ids=[p.stem for p in RECIPES])
def test_each_paper_recipe_checks_with_its_data_variables_set(recipe, data_variables, monkeypatch):
    names = named_variables(recipe)
    assert names, f"{recipe.name} reads no data path from the environment"
    missing = names - set(data_variables)
    assert not missing, f"no fixture for {sorted(missing)} ({recipe.name})"
    for name in names:
        monkeypatch.setenv(name, data_variables[name])
    result = CliRunner().invoke(main, ["recipe", "check", str(recipe)])
    assert result.exit_code == 0, result.output
    assert f"ok: {recipe}" in result.output
    assert "llm=openai" in result.output  # a real model's backend: these runs reproduce model results


@pytest.mark.parametrize("recipe", RECIPES, ids=[p.stem for p in RECIPES])
def test_each_paper_recipe_names_its_unset_data_variables(recipe, data_variables, monkeypatch):
    names = named_variables(recipe)
    for name in data_variables:
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["recipe", "check", str(recipe)])
    assert result.exit_code == 2, result.output
    for name in names:
        assert f"environment variable {name} is not set" in result.output, result.output
        assert f"export {name}=..." in result.output


def test_the_rocm_recipe_times_against_the_originals_the_variable_names(data_variables, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEAK_") or k == "GEAK_CACHE_DIR"}
    recipe, base = PAPER / "geak-rocm.toml", PAPER / "zero-shot-rocm.toml"  # the variable is the base's
    unset = subprocess.run([sys.executable, "-m", "geak_core.cli", "recipe", "check", str(recipe)],
                           capture_output=True, text=True, env=env, timeout=120)
    assert unset.returncode == 2
    line = next(n for n, text in enumerate(base.read_text().splitlines(), 1) if text.startswith("baseline ="))
    assert (f"{base}:{line}: [suite.baseline] environment variable GEAK_ROCM_BASELINE is not set"
            in unset.stderr), unset.stderr
    shown = subprocess.run([sys.executable, "-m", "geak_core.cli", "recipe", "show", str(recipe)],
                           capture_output=True, text=True, timeout=120,
                           env={**env, "GEAK_ROCM_BASELINE": data_variables["GEAK_ROCM_BASELINE"]})
    assert shown.returncode == 0, shown.stderr
    assert f'baseline = "{data_variables["GEAK_ROCM_BASELINE"]}"' in shown.stdout
