"""Lets the Triton interpreter take loop bounds from runtime scalars under NumPy >= 2.4.

Triton 3.6's interpreter stores a scalar argument as a one-element array and
converts it with ``int(array)``, which NumPy 2.4 rejects ("only 0-dimensional
arrays can be converted to Python scalars"); every ``range(0, n, BLOCK)``
over a runtime ``n`` then fails. Here ``__index__`` is re-patched to use
``.item()``. Test-only; it changes nothing when the conversion works.
"""

from __future__ import annotations

import numpy as np
import pytest


def _int_of_one_element_array_works() -> bool:
    try:
        int(np.array([1]))  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


@pytest.fixture(autouse=True, scope="session")
def _interpreter_scalar_index():
    if _int_of_one_element_array_works():
        yield
        return
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor

    def patched(tensor, scope):  # type: ignore[no-untyped-def]
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    interpreter._patch_lang_tensor = patched
    yield
    interpreter._patch_lang_tensor = original
