"""One table of component kinds (geak_core.api.components.COMPONENT_KINDS) drives the register
hooks, the plugin manager's registries, the recipe's sections and the docs."""

from __future__ import annotations

import dataclasses
import inspect
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import geak_core
from geak_core.api import hookspecs
from geak_core.api.components import COMPONENT_KINDS
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import COMPONENT_SECTIONS, PLAIN_SECTIONS

ROOT = Path(__file__).resolve().parents[2]


def test_every_kind_has_its_typed_documented_register_hook():
    for kind in COMPONENT_KINDS:
        spec = getattr(hookspecs, kind.hook)
        assert list(inspect.signature(spec).parameters) == ["register"]
        assert f"[{kind.section}] {kind.key}" in spec.__doc__ and kind.protocol.__name__ in spec.__doc__


def test_every_kind_has_a_registry_and_a_recipe_section():
    manager = PluginManager(load_entry_points=False)
    for kind in COMPONENT_KINDS:
        assert isinstance(manager.components(kind.name), dict)
        if kind.options:
            assert COMPONENT_SECTIONS[kind.section] == (kind.name, kind.key, kind.default)
        else:
            fields = {f.name for f in dataclasses.fields(PLAIN_SECTIONS[kind.section])}
            assert kind.key in fields


def test_the_plugin_guide_lists_every_kind():
    guide = (ROOT / "docs" / "plugins.md").read_text()
    for kind in COMPONENT_KINDS:
        assert f"`{kind.hook}`" in guide and f"`[{kind.section}] {kind.key}`" in guide, kind.name


NOTIFIER = (
    '    ComponentKind("notifier", "geak_register_notifiers", object, "notifiers", "notifier",'
    ' default="local"),'
)

SCRIPT = textwrap.dedent('''
    from dataclasses import dataclass
    from geak_core import hookimpl
    from geak_core.api import hookspecs
    from geak_core.api.errors import RecipeError
    from geak_core.engine.plugins import PluginManager
    from geak_core.engine.recipe import load_recipe

    @dataclass
    class LocalOptions:
        workers: int = 1

    class Plugin:
        @hookimpl
        def geak_register_notifiers(self, register):
            register("local", lambda options: ("local", options.workers), options=LocalOptions)
        # the recipe's other defaults
        @hookimpl
        def geak_register_llm_backends(self, register):
            register("echo", lambda options: None)
        @hookimpl
        def geak_register_evaluators(self, register):
            register("triton", lambda options: None)
        @hookimpl
        def geak_register_suites(self, register):
            register("rocm", lambda options: None)
        @hookimpl
        def geak_register_prompt_templates(self, register):
            register("default", lambda options: None)
        @hookimpl
        def geak_register_generators(self, register):
            register("geak", lambda options: None)
        @hookimpl
        def geak_register_reflectors(self, register):
            register("geak", lambda options: None)
        @hookimpl
        def geak_register_policies(self, register):
            register("geak", lambda options: None)

    print(hookspecs.geak_register_notifiers.__doc__)
    manager = PluginManager(load_entry_points=False, extra_plugins=[("p", Plugin())])
    recipe = load_recipe("recipe.toml", manager)
    chosen = recipe.components["notifier"]
    print(chosen.kind, chosen.name, manager.build(chosen.kind, chosen.name, chosen.options))
    print(recipe.data["notifier"])
    open("recipe.toml", "a").write("thread = 2\\n")
    try:
        load_recipe("recipe.toml", manager)
    except RecipeError as exc:
        print([p.format() for p in exc.problems])
''')


def test_a_new_kind_is_one_entry_in_the_table(tmp_path):
    """Copy geak_core, add one line to COMPONENT_KINDS, and the kind is registered, hooked,
    named in recipes and validated there, with nothing else edited."""
    package = Path(geak_core.__file__).parent
    copy = tmp_path / "site" / "geak_core"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    source = (copy / "api" / "components.py").read_text()
    anchor = "\n)\n\nKIND_BY_NAME"
    assert source.count(anchor) == 1
    (copy / "api" / "components.py").write_text(source.replace(anchor, "\n" + NOTIFIER + anchor))
    (tmp_path / "recipe.toml").write_text('[llm]\nbackend = "echo"\n\n[notifier]\nworkers = 3\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "GEAK_LOAD_PLUGINS": ""}
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc, built, resolved, problems = out.stdout.strip().splitlines()
    assert doc.startswith("Register notifiers") and "[notifier] name" in doc
    assert built == "notifier local ('local', 3)"
    assert resolved == "{'name': 'local', 'workers': 3}"
    assert "recipe.toml:6: [notifier.thread] unknown key" in problems
