"""What the judge's child runs around the profiled calls: a proton session.

Imported in the candidate's sandboxed child, so it imports nothing of geak's and Triton's
profiler only when the session starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# The session's file is this name plus ".hatchet" in the output folder.
SESSION_NAME = "proton"


@contextmanager
def session(out: str) -> Iterator[None]:
    """A proton session writing its tree into ``out`` (``out/proton.hatchet``), with the
    ``triton`` launch hook so that a kernel's launch metadata (``flops*``, ``bytes``) is
    recorded with its time; finalized on the way out, whatever happens inside."""
    import triton.profiler as proton

    session_id = proton.start(os.path.join(out, SESSION_NAME), hook="triton")
    try:
        yield
    finally:
        if session_id is not None:  # None: proton was disabled (TRITON_PROTON_DISABLE)
            proton.finalize(session_id, "hatchet")
