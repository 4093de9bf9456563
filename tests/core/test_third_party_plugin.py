"""The example third-party plugin, installed with pip, is found and usable with no change to core."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.venvs import venv_seeing_this_environment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "geak-hello-suite"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtualenv of its own that sees this environment's packages, with the example installed.

    The example is installed as a user installs a plugin: its wheel is built (from a copy, so
    the source tree gets no build output; with this environment's setuptools, so no index is
    needed) and pip installs it into the virtualenv. The virtualenv sees geak-core through a
    .pth file that adds this environment's site directories (their own .pth files included, so
    editable installs resolve), not through --system-site-packages, which would show the base
    interpreter's packages instead of this environment's.
    """
    root = tmp_path_factory.mktemp("third-party")
    path, wheels, source = root / "venv", root / "wheels", root / "geak-hello-suite"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    python = venv_seeing_this_environment(path)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--wheel-dir", str(wheels), str(source)],
        check=True, env=env,
    )
    (wheel,) = wheels.glob("geak_hello_suite-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", str(wheel)],
        check=True, env=env,
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
