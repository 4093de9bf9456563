"""Registers the ``default`` prompt template set."""

from __future__ import annotations

from geak_core import hookimpl

from geak_templates.templates import default_set


@hookimpl
def geak_register_prompt_templates(register):  # type: ignore[no-untyped-def]
    register(
        "default",
        default_set,
        description="GEAK-style prompts: generate, reflect, strategy (restart), optimize",
    )
