"""The example recipes' [llm] sections are valid options of the backends they name."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from geak_core.kit.llm_http import resolve_api_key
from geak_llm_anthropic.backend import AnthropicBackend, AnthropicOptions
from geak_llm_gemini.backend import GeminiBackend, GeminiOptions
from geak_llm_openai.backend import DEFAULT_HOST, DEFAULT_KEY_ENV, OpenAIBackend, OpenAIOptions

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
BACKENDS = {"openai": (OpenAIOptions, OpenAIBackend), "gemini": (GeminiOptions, GeminiBackend),
            "anthropic": (AnthropicOptions, AnthropicBackend)}
NAMES = ["openai", "gemini", "anthropic", "local-vllm", "local-sglang", "local-ollama", "local-llamacpp"]


@pytest.mark.parametrize("name", NAMES)
def test_example_recipe_llm_section_builds_its_backend(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GEMINI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    llm = dict(tomllib.loads((RECIPES / f"{name}.toml").read_text())["llm"])
    options_type, backend_type = BACKENDS[llm.pop("backend")]
    backend = backend_type(options_type(**llm))
    assert backend.identity()["model"] == llm["model"]


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("local-")])
def test_local_recipes_send_no_key(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm = tomllib.loads((RECIPES / f"{name}.toml").read_text())["llm"]
    key, _ = resolve_api_key(
        "openai", base_url=llm["base_url"], api_key_env=llm.get("api_key_env"),
        default_env=DEFAULT_KEY_ENV, default_host=DEFAULT_HOST,
    )
    assert key is None
