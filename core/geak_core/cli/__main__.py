"""``python -m geak_core.cli``: the ``geak-core`` command."""

from geak_core.cli import entry

entry()
