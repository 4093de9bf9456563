"""`doctor` and `recipe check` resolve an LLM backend's key variable the same way."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main
from geak_core.engine.recipe import default_env_requirements, env_requirements

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "openai.toml"


def _doctor_line(name: str) -> str:
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0, result.output
    return next(line for line in result.output.splitlines() if line.startswith(f"backend {name}:"))


def test_doctor_and_recipe_check_both_name_the_unset_default_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert _doctor_line("openai") == ("backend openai: OPENAI_API_KEY not set "
                                      "(read by default; api_key_env names another)")
    doctor = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    assert doctor["backends"]["openai"] == "OPENAI_API_KEY not set"
    check = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert check.exit_code == 2
    assert "environment variable OPENAI_API_KEY is not set" in check.output


def test_doctor_and_recipe_check_both_accept_the_set_default_variable(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert _doctor_line("openai").startswith("backend openai: OPENAI_API_KEY set ")
    doctor = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    assert doctor["backends"]["openai"] == "OPENAI_API_KEY set"
    check = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert check.exit_code == 0, check.output
    assert check.output.startswith(f"ok: {RECIPE}")


@pytest.mark.parametrize("backend, variable", [("gemini", "GEMINI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_doctor_names_each_http_backends_default_variable(monkeypatch, backend, variable):
    monkeypatch.setenv(variable, "k")
    assert _doctor_line(backend).startswith(f"backend {backend}: {variable} set (read by default")
    monkeypatch.delenv(variable)
    assert _doctor_line(backend).startswith(f"backend {backend}: {variable} not set (read by default")


@dataclass
class _ByModel:
    model: str
    api_key_env: str | None = field(default=None, metadata={"env": True})

    def required_env(self) -> list[tuple[str, str]]:
        return [("api_key_env", f"{self.model.upper()}_KEY")] if self.api_key_env is None else []


@dataclass
class _Named:
    model: str
    api_key_env: str = field(default="MY_KEY", metadata={"env": True})


def test_default_requirements_are_what_a_recipe_leaving_the_keys_out_needs():
    assert default_env_requirements(_Named) == [("api_key_env", "MY_KEY", False)]
    assert env_requirements(_Named(model="m")) == [("api_key_env", "MY_KEY", False)]
    assert default_env_requirements(_ByModel) is None  # the variable depends on the required model
    assert env_requirements(_ByModel(model="m")) == [("api_key_env", "M_KEY", True)]
    assert default_env_requirements(None) == []
