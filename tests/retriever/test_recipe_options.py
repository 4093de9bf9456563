"""`codesim` and `opro` options are checked when a recipe is loaded, located by key."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core.api.errors import RecipeError
from geak_core.engine.plugins import get_plugin_manager
from geak_core.engine.recipe import load_recipe

BASE = """
[llm]
backend = "replay"
source = "calls.jsonl"

[suite]
name = "rocm"

[knowledge]
packs = ["triton-core", "hardware"]
"""


def write(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "calls.jsonl").write_text("")  # the replay source must exist
    path = tmp_path / "recipe.toml"
    path.write_text(BASE + extra)
    return path


def test_a_recipe_with_codesim_and_opro_options_loads(tmp_path: Path) -> None:
    extra = """
[retriever]
name = "codesim"
top_k = 2
query = "code"
corpora = []

[optimizer]
name = "opro"
archive_size = 4
explore = true
"""
    recipe = load_recipe(write(tmp_path, extra), get_plugin_manager(), check_env=False)
    assert recipe.component("retriever").options.top_k == 2
    assert recipe.component("optimizer").options.archive_size == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[retriever]\nname = "codesim"\ntop_k = 0\n', "retriever.top_k must be at least 1"),
        ('[retriever]\nname = "codesim"\nquery = "title"\n', "invalid value 'title'"),
        ('[optimizer]\nname = "opro"\narchive_size = 0\n', "optimizer.archive_size"),
        ('[optimizer]\nname = "opro"\nmin_speedup_delta = -1.0\n', "must not be negative"),
    ],
)
def test_bad_options_are_reported_before_any_work(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as info:
        load_recipe(write(tmp_path, extra), get_plugin_manager(), check_env=False)
    assert "recipe.toml" in str(info.value)
