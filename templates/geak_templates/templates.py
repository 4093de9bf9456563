"""The default prompt template set: Jinja files under ``default/``.

Files starting with ``_`` are partials included by the others.
"""

from __future__ import annotations

from importlib import resources

from geak_core.api.components import TemplateSetBase


class DirectoryTemplateSet(TemplateSetBase):
    """Templates read from a package folder: ``<name>.j2`` files."""

    def __init__(self, package: str, folder: str):
        self.root = resources.files(package) / folder

    def names(self) -> list[str]:
        return sorted(p.name[:-3] for p in self.root.iterdir() if p.name.endswith(".j2"))

    def source(self, name: str) -> str:
        return (self.root / f"{name}.j2").read_text()


def default_set(options: object = None) -> DirectoryTemplateSet:
    return DirectoryTemplateSet("geak_templates", "default")
