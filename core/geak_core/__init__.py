"""geak-core: a plugin framework for LLM agents that write, check and speed up Triton kernels.

Public names for plugin authors: ``hookimpl``, the protocols and dataclasses in
``geak_core.api.components``, the data model in ``geak_core.api.model``, tasks in
``geak_core.api.tasks``, the harness contract in ``geak_core.api.harness`` and the LLM
types in ``geak_core.api.llm``.
"""

from geak_core import _moved  # noqa: F401  (first: the old module paths, before anything imports one)
from geak_core.api.hookspecs import hookimpl, hookspec

__version__ = "0.1.0"

__all__ = ["hookimpl", "hookspec", "__version__"]
