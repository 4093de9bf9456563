"""Saying which task files a suite of this family (tritonbench, kernelbenchx) left out:
once per process, and where each one's reason is listed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

_UNUSABLE_SAID: set[tuple[str, str, frozenset[str]]] = set()
_UNUSABLE_LOCK = threading.Lock()


def warn_unusable(log: logging.Logger, suite: str, folder: str, unusable: Mapping[str, str],
                  listing: str) -> None:
    """Say on ``log`` which task files of ``folder`` the suite ``suite`` leaves out (its
    ``unusable()``: found, but not readable as tasks) and that ``listing``, a command, shows
    each one's reason; once per process for the same files, however often the suite is built
    (a run builds it to check the recipe and to run it, an ablation once per recipe)."""
    key = (suite, folder, frozenset(unusable))
    with _UNUSABLE_LOCK:
        if not unusable or key in _UNUSABLE_SAID:
            return
        _UNUSABLE_SAID.add(key)
    count = len(unusable)
    log.warning("%s: %d task file%s under %s cannot be read as a task and %s left out (%s); "
                "`%s` lists each with its reason", suite, count, "" if count == 1 else "s", folder,
                "is" if count == 1 else "are", ", ".join(sorted(unusable)), listing)
