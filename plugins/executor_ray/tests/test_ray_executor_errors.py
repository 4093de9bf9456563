"""Choosing the ray executor: what a recipe and ``geak-core eval`` say when it cannot work (an
unknown executor, Ray missing, a bad or unreachable address), and what a judge's worker keeps
of its environment. No cluster is started here."""

from __future__ import annotations

import socket
import textwrap

import pytest
from click.testing import CliRunner
from geak_core.api.errors import RecipeError
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from ray_support import QUICKSTART, ROOT


def _recipe(tmp_path, executor: str):
    path = tmp_path / "recipe.toml"
    path.write_text(textwrap.dedent(f"""\
        include = "{QUICKSTART}"

        [run]
        output_dir = "{tmp_path / 'runs'}"

        [executor]
        """) + textwrap.dedent(executor))
    return path


def _problems(path) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        load_recipe(path, PluginManager())
    return [p.format() for p in caught.value.problems]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unknown_executor_is_named_at_its_line_with_a_suggestion(tmp_path):
    path = _recipe(tmp_path, 'name = "rey"\n')
    assert _problems(path) == [f"{path}:7: [executor.name] unknown executor 'rey' (did you mean 'ray'?)"]


def test_without_ray_installed_the_recipe_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr("geak_executor_ray.options.ray_installed", lambda: False)
    path = _recipe(tmp_path, 'name = "ray"\naddress = "local"\n')
    (problem,) = _problems(path)
    assert problem.startswith(f"{path}:6: [executor] invalid options: the ray executor needs the "
                              "ray package, which is not installed")
    assert "pip install -e plugins/executor_ray" in problem


def test_an_address_that_is_no_address_is_refused_before_anything_runs(tmp_path):
    path = _recipe(tmp_path, 'name = "ray"\naddress = "head node"\njudges = -1\n')
    (problem,) = _problems(path)
    assert "address 'head node' is none of auto, local, HOST:PORT or ray://HOST:PORT" in problem
    assert "judges must be >= 0" in problem


def test_an_unreachable_cluster_stops_the_run_at_the_address_line(tmp_path):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    port = _closed_port()
    path = _recipe(tmp_path, f'name = "ray"\naddress = "127.0.0.1:{port}"\nconnect_timeout_s = 5\n')
    plugins = PluginManager()
    with pytest.raises(RecipeError) as caught:
        run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    (problem,) = [p.format() for p in caught.value.problems]
    assert problem.startswith(f"{path}:8: [executor.address] no Ray cluster answers at "
                              f"127.0.0.1:{port} (")
    assert "ray start --head" in problem
    assert not ray.is_initialized()
    assert not (tmp_path / "runs").exists()  # refused before a run folder was made


def test_recipe_check_reaches_the_cluster_as_run_does(tmp_path):
    ray = pytest.importorskip("ray")
    port = _closed_port()
    path = _recipe(tmp_path, f'name = "ray"\naddress = "127.0.0.1:{port}"\nconnect_timeout_s = 5\n')
    result = CliRunner().invoke(main, ["recipe", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert f"error: {path}:8: [executor.address] no Ray cluster answers at 127.0.0.1:{port}" in result.output
    assert "ok:" not in result.output
    assert not ray.is_initialized()
    assert not (tmp_path / "runs").exists()


def test_more_judges_than_a_private_instance_holds_are_refused_at_once(tmp_path,
                                                                       ray_state_kept):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    path = _recipe(tmp_path, 'name = "ray"\naddress = "local"\njudges = 64\n')
    plugins = PluginManager()
    with pytest.raises(RecipeError) as caught:
        run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    (problem,) = [p.format() for p in caught.value.problems]
    assert problem.startswith(f"{path}:9: [executor.judges] 64 judges do not fit on this machine's "
                              "private Ray instance: each asks for 1 CPU")
    assert not ray.is_initialized()  # the instance it started is stopped


def test_the_example_recipe_names_the_ray_executor():
    recipe = load_recipe(ROOT / "recipes" / "quickstart-ray.toml", PluginManager())
    chosen = recipe.components["executor"]
    assert (chosen.name, chosen.options.address, chosen.options.gpus_per_judge) == ("ray", "auto", 1)
    assert recipe.components["evaluator"].name == "triton"


def test_eval_names_the_option_of_an_unreachable_cluster_and_exits_2(tmp_path):
    pytest.importorskip("ray")
    port = _closed_port()
    candidate = tmp_path / "test_add_kernel.py"
    candidate.write_text("x = 1\n")
    result = CliRunner().invoke(main, ["eval", "--suite", "rocm", str(candidate), "--executor", "ray",
                                       "--executor-option", f"address=127.0.0.1:{port}"])
    assert result.exit_code == 2
    assert f"--executor-option address: no Ray cluster answers at 127.0.0.1:{port}" in result.output


def test_eval_checks_executor_options_and_names(tmp_path):
    candidate = tmp_path / "test_add_kernel.py"
    candidate.write_text("x = 1\n")
    runner = CliRunner()
    bad = runner.invoke(main, ["eval", "--suite", "rocm", str(candidate), "--executor", "ray",
                               "--executor-option", "judges=many"])
    assert bad.exit_code == 2
    assert "--executor-option: [executor.judges] expected integer, got str 'many'" in bad.output
    unknown = runner.invoke(main, ["eval", "--suite", "rocm", str(candidate), "--executor", "rey"])
    assert unknown.exit_code == 2 and "no executor named 'rey' (did you mean 'ray'?)" in unknown.output


def test_the_plugin_list_shows_both_executors_and_the_ray_options():
    result = CliRunner().invoke(main, ["plugins"])
    assert result.exit_code == 0, result.output
    assert "executor: local" in result.output and "executor: ray" in result.output
    assert "address: string = 'auto'" in result.output and "gpus_per_judge: integer = 1" in result.output


def test_a_judge_worker_keeps_no_credentials_but_keeps_ray_settings():
    from geak_executor_ray.judge import drop_credentials

    environ = {"OPENAI_API_KEY": "sk-1", "HF_TOKEN": "hf", "GEMINI_API_KEY": "g", "PATH": "/usr/bin",
               "RAY_AUTH_TOKEN": "ray-own", "CUDA_VISIBLE_DEVICES": "0", "TRITON_INTERPRET": "1"}
    dropped = drop_credentials(environ)
    assert sorted(dropped) == ["GEMINI_API_KEY", "HF_TOKEN", "OPENAI_API_KEY"]
    assert environ == {"PATH": "/usr/bin", "RAY_AUTH_TOKEN": "ray-own", "CUDA_VISIBLE_DEVICES": "0",
                       "TRITON_INTERPRET": "1"}
