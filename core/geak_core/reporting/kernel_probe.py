"""What a KernelBench-format reference looks like from outside, found in a child process.

``geak-core export-kernel`` needs, before it writes an op schema, the kinds of the
forward's inputs, their names, the module's parameters and the structure of its output.
:func:`probe` finds them by running the reference ``Model`` on the meta device (shapes and
dtypes only, no data, no memory). This file is run as a script in a child process
(``python kernel_probe.py REFERENCE``, by its path, so that it imports nothing of
geak-core): a task's code never runs in geak-core's own process. The result is the last
line of stdout, after ``RESULT_MARKER``. The candidate is never imported here at all.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from typing import Any

RESULT_MARKER = "geak-kernel-probe: "


def _load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("geak_export_reference", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _describe(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {"kind": "Tensor", "dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape)}
    if isinstance(value, bool):
        return {"kind": "bool", "value": value}
    if isinstance(value, int):
        return {"kind": "int", "value": value}
    if isinstance(value, float):
        return {"kind": "float", "value": value}
    if isinstance(value, str):
        return {"kind": "str", "value": value}
    if isinstance(value, (list, tuple)) and value:
        items = [_describe(v) for v in value]
        kinds = {i["kind"] for i in items}
        if len(kinds) == 1 and kinds <= {"Tensor", "int", "float", "bool"}:
            return {"kind": f"{items[0]['kind']}[]", "items": items}
    return {"kind": "unsupported", "type": type(value).__name__}


def _arg_names(forward: Any, count: int) -> list[str]:
    """The forward's parameter names, where it names each input; else x0, x1, ..."""
    try:
        params = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    plain = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(plain) >= count and all(p.kind != p.VAR_POSITIONAL for p in params[:count]):
        return plain[:count]
    return [f"x{i}" for i in range(count)]


def probe(reference: str) -> dict[str, Any]:
    """``reference``: the reference file. Returns the inputs (kind, dtype and shape
    or value), the forward's argument names, the parameters and buffers, the init inputs
    (as text) and the output: a Tensor, or a tuple or list of Tensors and how many."""
    import torch

    module = _load(reference)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if name not in vars(module):
            return {"error": f"the reference defines no {name}"}
    with torch.device("meta"):
        init = list(module.get_init_inputs())
        model = module.Model(*init)
        inputs = list(module.get_inputs())
        with torch.no_grad():
            out = model(*inputs)
    if isinstance(out, torch.Tensor):
        output: dict[str, Any] = {"kind": "Tensor", "count": 1, "dtypes": [str(out.dtype).removeprefix("torch.")]}
    elif isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        output = {"kind": type(out).__name__, "count": len(out),
                  "dtypes": [str(o.dtype).removeprefix("torch.") for o in out]}
    else:
        output = {"kind": "unsupported", "type": type(out).__name__}
    tensors = [*model.named_parameters(), *model.named_buffers()]
    return {
        "inputs": [_describe(v) for v in inputs],
        "arg_names": _arg_names(model.forward, len(inputs)),
        "params": [[name, list(t.shape), str(t.dtype).removeprefix("torch.")] for name, t in tensors],
        "init_inputs": repr(init),
        "output": output,
    }


if __name__ == "__main__":
    found = probe(sys.argv[1])
    sys.stdout.flush()
    print(RESULT_MARKER + json.dumps(found), flush=True)
