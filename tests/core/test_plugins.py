"""The plugin manager: registration, duplicates, broken plugins, GEAK_LOAD_PLUGINS."""

from __future__ import annotations

import importlib.metadata

import pytest
from geak_core import hookimpl
from geak_core.api.errors import PluginError, UnknownComponentError
from geak_core.engine.plugins import PluginManager


class _Retrievers:
    def __init__(self, *names):
        self.names = names

    @hookimpl
    def geak_register_retrievers(self, register):
        for name in self.names:
            register(name, lambda options, name=name: name, description=f"retriever {name}")


def test_builtin_none_components_are_registered_like_any_other():
    pm = PluginManager(load_entry_points=False)
    assert pm.spec("retriever", "none").plugin == "geak_core.engine.builtin"
    assert pm.spec("optimizer", "none").plugin == "geak_core.engine.builtin"


def test_one_plugin_may_register_several_components():
    pm = PluginManager(load_entry_points=False, extra_plugins=[("mine", _Retrievers("a", "b"))])
    assert {"a", "b"} <= set(pm.components("retriever"))
    assert [c.name for c in pm.plugins["mine"].components] == ["a", "b"]


def test_duplicate_names_are_an_error_naming_both_plugins():
    with pytest.raises(PluginError) as info:
        PluginManager(load_entry_points=False,
                      extra_plugins=[("first", _Retrievers("x")), ("second", _Retrievers("x"))])
    assert "'first'" in str(info.value) and "'second'" in str(info.value)


def test_unknown_component_names_suggest_the_closest():
    pm = PluginManager(load_entry_points=False, extra_plugins=[("mine", _Retrievers("codesim"))])
    with pytest.raises(UnknownComponentError, match="did you mean 'codesim'"):
        pm.spec("retriever", "codesm")


class _FakeEntryPoint:
    def __init__(self, name, loader):
        self.name = name
        self.value = f"fake_{name}.plugin"
        self.dist = None
        self._loader = loader

    def load(self):
        return self._loader()


def _broken():
    raise ImportError("No module named 'missing_dependency'")


def test_a_plugin_that_fails_to_import_is_reported_and_the_rest_load(monkeypatch):
    eps = [_FakeEntryPoint("broken", _broken), _FakeEntryPoint("good", lambda: _Retrievers("ok"))]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.delenv("GEAK_LOAD_PLUGINS", raising=False)
    pm = PluginManager()
    assert "missing_dependency" in pm.plugins["broken"].error
    assert "ok" in pm.components("retriever")


def test_geak_load_plugins_restricts_entry_points(monkeypatch):
    eps = [_FakeEntryPoint("a", lambda: _Retrievers("ra")), _FakeEntryPoint("b", lambda: _Retrievers("rb"))]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.setenv("GEAK_LOAD_PLUGINS", "b")
    assert set(PluginManager().components("retriever")) == {"none", "rb"}
    monkeypatch.setenv("GEAK_LOAD_PLUGINS", "")
    assert set(PluginManager().components("retriever")) == {"none"}


def test_a_failing_observer_does_not_stop_the_others(caplog):
    seen = []

    class Bad:
        @hookimpl
        def geak_run_finished(self, run_id, run_dir, summary):
            raise RuntimeError("boom")

    class Good:
        @hookimpl
        def geak_run_finished(self, run_id):
            seen.append(run_id)

    pm = PluginManager(load_entry_points=False, extra_plugins=[("bad", Bad()), ("good", Good())])
    pm.notify("geak_run_finished", run_id="r1", run_dir="/x", summary=None)
    assert seen == ["r1"] and "boom" in caplog.text


def test_bundled_plugins_load_without_errors():
    pm = PluginManager()
    broken = {name: info.error for name, info in pm.plugins.items() if info.error}
    assert broken == {}
