"""Module paths from before the wings (``geak_core.agent``) still import until 1.0: with a
DeprecationWarning, and as the moved module itself, whichever way they are imported.

The project itself uses the new paths only: the test configuration turns the warning into
an error for everything else the suite runs, and the last test reads every import.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from unittest import mock

import geak_core
import pytest
from geak_core._moved import MOVED, moved_message

ROOT = Path(__file__).resolve().parents[2]
# Read for old paths: everything of the project but the example third-party plugin, which
# keeps the imports it was written with (tests/core/test_third_party_plugin.py runs it).
SCANNED = ("core", "plugins", "templates", "tests", "bench")


def warns_moved(old: str):
    return pytest.warns(DeprecationWarning, match=f"^{re.escape(moved_message(old))}$")


@pytest.fixture(autouse=True)
def _forget_old_paths():
    """An old path warns when it is first imported: forget those imported by other tests."""

    def forget():
        for old in MOVED:
            sys.modules.pop(old, None)
            vars(geak_core).pop(old.rpartition(".")[2], None)

    forget()
    yield
    forget()


def test_the_package_re_exports_the_public_names_of_api():
    api = [importlib.import_module(f"geak_core.api.{p.stem}")
           for p in sorted((Path(geak_core.__file__).parent / "api").glob("[!_]*.py"))]
    for name in geak_core.__all__:
        if name != "__version__":
            assert any(vars(module).get(name) is vars(geak_core)[name] for module in api), name
    from geak_core import Harness, SuiteBase, Task, hookimpl  # noqa: F401  (as a plugin does)


def test_import_of_an_old_path_warns_and_gives_the_moved_module():
    with warns_moved("geak_core.agent"):
        import geak_core.agent as old
    assert old is importlib.import_module("geak_core.engine.agent")
    assert old.__name__ == "geak_core.engine.agent" and old.__spec__.name == "geak_core.engine.agent"


def test_from_an_old_path_import_gives_the_same_objects():
    from geak_core.engine.store import RunStore

    with warns_moved("geak_core.store"):
        from geak_core.store import RunStore as old
    assert old is RunStore


def test_from_the_package_import_of_an_old_module_name():
    from geak_core.kit import tensorio

    with warns_moved("geak_core.tensorio"):
        from geak_core import tensorio as old
    assert old is tensorio


def test_import_module_with_an_old_name():
    with warns_moved("geak_core.cli_eval"):
        old = importlib.import_module("geak_core.cli_eval")
    assert old is importlib.import_module("geak_core.cli.cli_eval")


def test_patching_through_an_old_path_patches_the_module_in_use():
    from geak_core.engine import agent

    original = agent.request_seed
    with warns_moved("geak_core.agent"), mock.patch("geak_core.agent.request_seed") as fake:
        assert agent.request_seed is fake
    assert agent.request_seed is original


def test_the_warning_points_at_the_importing_line():
    with warns_moved("geak_core.model") as record:
        import geak_core.model  # noqa: F401
    assert record[0].filename == __file__


def test_an_old_path_is_found_without_being_imported():
    spec = importlib.util.find_spec("geak_core.recipe")
    assert spec is not None and "geak_core.recipe" not in sys.modules


def test_a_name_that_never_existed_is_still_missing():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("geak_core.agents")


def test_every_old_path_leads_to_a_module_of_the_same_name_and_no_file_is_left_behind():
    package = Path(geak_core.__file__).parent
    for old, new in MOVED.items():
        name = old.rpartition(".")[2]
        assert new.rpartition(".")[2] == name
        assert importlib.util.find_spec(new).origin.startswith(str(package)), new
        assert not (package / f"{name}.py").exists(), old


def _old_paths(path: Path) -> list[str]:
    """The old paths ``path`` imports, or names in a string of one dotted name (a patch
    target, a module run with -m, a name the judge guards)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError:  # a fixture that must not parse (a broken data file), not project code
        return []
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
            if node.module == "geak_core":  # from geak_core import agent
                names += [f"geak_core.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
            names = [node.value.split(":")[0]]
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                  if ".".join(name.split(".")[:2]) in MOVED]
    return found


def test_nothing_in_the_project_uses_an_old_path():
    paths = [p for folder in SCANNED for p in sorted((ROOT / folder).rglob("*.py"))
             if p != Path(__file__)]
    assert [hit for path in paths for hit in _old_paths(path)] == []
