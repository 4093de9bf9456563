"""Run each task file once on torch's meta device, in a child process of the suite.

Meta tensors carry shapes and dtypes but no data, so a file whose sizes fill gigabytes
is checked in milliseconds: it imports, ``get_init_inputs()`` and ``get_inputs()``
return lists, ``Model`` builds and its ``forward`` returns a tensor or a tuple of tensors.
Each case's bytes moved (inputs read, outputs written) are counted for the roofline
figures. An operator without a meta implementation leaves its outputs unchecked (noted),
never the file unusable; any other exception makes the file unusable with that reason.

Reads a JSON list of ``{"file", "module", "sets", "small_sets", "dtypes"}`` on stdin;
writes one JSON object per file, by file.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from typing import Any

from geak_suite_local.loading import (
    case_name,
    cast,
    forward_inputs,
    import_file,
    init_inputs,
    output_list,
    overridden,
)
from geak_suite_local.modelfile import REFERENCE_CLASS

INPUTS_S = 20  # importing the file, get_init_inputs(), get_inputs()
MODEL_S = 5  # building the model, its forward (on meta: shapes only)


class _Slow(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Slow()


def _nbytes(values: list[Any]) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def _where(exc: BaseException, path: str) -> str:
    """The last line of the task file in the traceback, for the message."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return f" (line {lines[-1]})" if lines else ""


def _is_meta_limit(exc: BaseException) -> bool:
    """An operator or call that torch's meta device cannot run (no data to read)."""
    text = str(exc).lower()
    return isinstance(exc, (NotImplementedError, RuntimeError)) and (
        "meta" in text or "data-dependent" in text or "data dependent" in text)


def _unchecked(why: str) -> dict[str, Any]:
    return {"bytes": None, "outputs": None, "note": f"outputs not checked ahead: {why}"}


def _case(module: Any, path: str, overrides: dict[str, Any], dtype_name: str,
          step: list[str]) -> dict[str, Any]:
    import torch

    dtype = getattr(torch, dtype_name)
    with overridden(module, overrides), torch.device("meta"):
        step.append("get_init_inputs()")
        signal.alarm(INPUTS_S)
        init = init_inputs(module, path)
        step.append("get_inputs()")
        try:
            inputs = [cast(v, dtype) for v in forward_inputs(module, path)]
        except Exception as exc:
            if not _is_meta_limit(exc):
                raise
            return _unchecked(f"get_inputs() cannot run on the meta device "
                              f"({str(exc).splitlines()[0][:120]})")
        # building and running the model on meta: a limit of the meta device (an operator
        # without a meta kernel, a data-dependent step, a slow decomposition) leaves the
        # outputs unchecked; any other error is the file's
        try:
            signal.alarm(MODEL_S)
            step.append(f"{REFERENCE_CLASS}(*get_init_inputs())")
            model = getattr(module, REFERENCE_CLASS)(*init)
            if not isinstance(model, torch.nn.Module):
                raise TypeError(f"{REFERENCE_CLASS} is not a torch.nn.Module subclass")
            model = model.to(dtype)
            step.append(f"{REFERENCE_CLASS}.forward")
            outputs = output_list(model(*inputs), REFERENCE_CLASS)
        except _Slow:
            return _unchecked(f"{step[-1]} took over {MODEL_S} s on the meta device")
        except Exception as exc:
            if not _is_meta_limit(exc):
                raise
            return _unchecked(f"{step[-1]} cannot run on the meta device "
                              f"({str(exc).splitlines()[0][:120]})")
        finally:
            signal.alarm(0)
    return {"bytes": _nbytes(inputs) + _nbytes(outputs),
            "outputs": [[list(o.shape), str(o.dtype).removeprefix("torch.")] for o in outputs]}


def probe_file(entry: dict[str, Any]) -> dict[str, Any]:
    path = entry["file"]
    step = ["importing the file"]
    label = ""
    several = len(entry["sets"]) > 1 or len(entry["dtypes"]) > 1
    try:
        signal.alarm(INPUTS_S)
        module = import_file(path, entry["module"])
        cases: dict[str, Any] = {}
        done: dict[str, Any] = {}  # the same sizes and dtype checked once (small = full sets)
        for mode, sets in (("full", entry["sets"]), ("small", entry["small_sets"])):
            for name, overrides in sets:
                for dtype in entry["dtypes"]:
                    case = case_name(name, dtype, entry["dtypes"])
                    label = f" (case {case!r}{', CPU sizes' if mode == 'small' else ''})" \
                        if several or mode == "small" else ""
                    same = json.dumps([overrides, dtype], sort_keys=True, default=repr)
                    if same not in done:
                        done[same] = _case(module, path, overrides, dtype, step)
                    cases[f"{mode}:{case}"] = done[same]
        return {"error": None, "cases": cases}
    except _Slow:
        return {"error": f"{path}: {step[-1]}{label} took over {INPUTS_S} s"}
    except Exception as exc:  # the file's own code failed: its message is the reason
        message = str(exc).splitlines()[0] if str(exc) else ""
        if message.startswith(path):
            return {"error": message}
        return {"error": f"{path}: {step[-1]}{label} failed{_where(exc, path)}: "
                         f"{type(exc).__name__}: {message[:300]}"}
    finally:
        signal.alarm(0)


def main() -> None:
    entries = json.loads(sys.stdin.read())
    signal.signal(signal.SIGALRM, _alarm)
    found = {}
    for entry in entries:
        found[entry["file"]] = probe_file(entry)
    json.dump(found, sys.stdout)


if __name__ == "__main__":
    main()
