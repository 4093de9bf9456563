"""The plugins bundled with geak-core, read from the distributions under plugins/ and templates/.

Each bundled plugin is a distribution whose ``pyproject.toml`` declares entry points in the
group ``geak``; this module is the one list of them, so a new bundled plugin needs no edit
to the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT_GROUP = "geak"


@dataclass(frozen=True)
class BundledPlugin:
    entry_point: str  # its name in the group "geak"
    module: str  # what the entry point names
    distribution: str  # the project name of its pyproject.toml
    folder: Path


def bundled_plugins() -> tuple[BundledPlugin, ...]:
    """Every entry point of group ``geak`` of every distribution in plugins/ and templates/."""
    found = []
    for project in sorted([*ROOT.glob("plugins/*/pyproject.toml"), ROOT / "templates" / "pyproject.toml"]):
        data = tomllib.loads(project.read_text(encoding="utf-8"))
        meta = data["project"]
        for name, module in sorted(meta.get("entry-points", {}).get(ENTRY_POINT_GROUP, {}).items()):
            found.append(BundledPlugin(name, module, meta["name"], project.parent))
    return tuple(found)


BUNDLED_PLUGINS: tuple[str, ...] = tuple(p.entry_point for p in bundled_plugins())
BUNDLED_DISTRIBUTIONS: tuple[str, ...] = tuple(sorted({p.distribution for p in bundled_plugins()}))
