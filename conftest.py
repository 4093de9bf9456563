"""Test isolation: only the bundled plugins load, whatever else is installed."""

from __future__ import annotations

import os

import pytest

from tests.support.bundled import BUNDLED_PLUGINS

os.environ["GEAK_LOAD_PLUGINS"] = ",".join(BUNDLED_PLUGINS)
# No GPU here: Triton kernels run under the interpreter (set before triton is imported).
if not (os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd")):
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _fresh_plugin_manager():
    from geak_core.engine.plugins import reset_plugin_manager

    reset_plugin_manager()
    yield
    reset_plugin_manager()
