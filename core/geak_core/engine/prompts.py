"""Prompt rendering: Jinja templates from a registered template set, plus recipe overrides.

Templates see only what ``Task.prompt_view()`` exposes (instruction, entry
points, tolerances, shapes): never the reference implementation or the oracle.
Undefined variables are errors, so a template and the loop cannot drift apart
silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from geak_core.api.errors import InputError

if TYPE_CHECKING:
    from geak_core.engine.plugins import PluginManager
    from geak_core.engine.recipe import Recipe

TEMPLATE_NAMES = ("system", "generate", "reflect", "strategy", "optimize")


class PromptRenderer:
    def __init__(self, sources: dict[str, str], origin: dict[str, str]):
        missing = [n for n in TEMPLATE_NAMES if n not in sources]
        if missing:
            raise InputError(f"prompt template set lacks templates: {', '.join(missing)}")
        self.origin = origin
        self.env = jinja2.Environment(
            loader=jinja2.DictLoader({**sources, **{f"{n}.j2": s for n, s in sources.items()}}),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )
        for name in sources:
            try:
                self.env.get_template(name)
            except jinja2.TemplateSyntaxError as exc:
                raise InputError(f"{origin.get(name, name)}:{exc.lineno}: template syntax error: {exc.message}") from exc

    @classmethod
    def from_recipe(cls, recipe: Recipe, plugins: PluginManager) -> PromptRenderer:
        template_set = plugins.build("prompt_templates", recipe.prompts.set)
        sources = {name: template_set.source(name) for name in template_set.names()}
        origin = {name: f"template set {recipe.prompts.set!r}: {name}" for name in sources}
        base = Path(recipe.path).parent
        for name, file in recipe.prompts.overrides.items():
            path = (base / file).resolve()
            try:
                sources[name] = path.read_text()
            except OSError as exc:
                raise InputError(f"prompts.overrides.{name}: cannot read {path}: {exc.strerror}") from exc
            origin[name] = str(path)
        return cls(sources, origin)

    def render(self, name: str, **variables: Any) -> str:
        try:
            return self.env.get_template(name).render(**variables).strip() + "\n"
        except jinja2.UndefinedError as exc:
            raise InputError(f"{self.origin.get(name, name)}: {exc.message}") from exc
