"""The example third-party plugin, installed with pip, is found and usable with no change to core."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "geak-hello-suite"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtualenv that sees the installed geak-core and gets the example plugin installed."""
    path = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)], check=True
    )
    python = path / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", str(EXAMPLE)],
        check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    return python


def geak(python, *args, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "GEAK_LOAD_PLUGINS"}
    return subprocess.run([str(python), "-m", "geak_core.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_installed_plugin_appears_in_geak_core_plugins(venv):
    out = geak(venv, "plugins")
    assert out.returncode == 0, out.stderr
    assert "hello (geak-hello-suite 0.1.0)" in out.stdout
    assert "suite: hello - example third-party suite with one task" in out.stdout
    assert "greeting: string = 'hello'" in out.stdout


def test_installed_plugin_is_selected_by_a_recipe(venv, tmp_path):
    recipe = tmp_path / "hello.toml"
    recipe.write_text(textwrap.dedent("""
        [llm]
        backend = "openai"
        model = "some-model"
        base_url = "http://127.0.0.1:9/v1"

        [suite]
        name = "hello"
        greeting = "hi"
    """))
    out = geak(venv, "recipe", "show", str(recipe))
    assert out.returncode == 0, out.stderr
    assert '[suite]\nname = "hello"' in out.stdout and 'greeting = "hi"' in out.stdout
    tasks = geak(venv, "tasks", "hello")
    assert tasks.returncode == 0 and "scale" in tasks.stdout


def test_without_the_plugin_the_recipe_is_rejected(tmp_path):
    recipe = tmp_path / "hello.toml"
    recipe.write_text('[llm]\nbackend = "openai"\nmodel = "m"\n[suite]\nname = "hello"\n')
    out = geak(sys.executable, "recipe", "check", "--no-env", str(recipe))
    assert out.returncode == 2
    assert "unknown suite 'hello'" in out.stderr
