"""The corpus checks launch kernels directly, so they apply the same interpreter fix
``geak_core.api.harness.launch`` applies: runtime scalars usable as loop bounds under
NumPy >= 2.4 (a no-op outside interpreter mode)."""

from __future__ import annotations

import pytest
from geak_core.api.harness import patch_interpreter_scalars


@pytest.fixture(autouse=True, scope="session")
def _interpreter_scalar_loop_bounds() -> None:
    patch_interpreter_scalars()
