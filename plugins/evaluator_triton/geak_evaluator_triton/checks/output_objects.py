"""Check: the outputs the judge reads are the objects it expects, not only the right values.

Comparing values is not enough when the objects holding them are the candidate's to shape:

* an output buffer the harness allocated (``Harness.allocate``) can be re-pointed at the
  candidate's own memory (``out.set_(...)``, ``out.data = ...``, a view of another
  buffer), so that the judge reads a result computed once, earlier, while the calls it
  times do almost nothing;
* an output can stop being a plain tensor (``out.__class__ = ...``), and a value an entry
  point returns can be a tensor subclass or a lazy object that does its work only when
  the judge reads it back (``__torch_function__``, its own ``cpu()``, ``clone()``,
  ``detach()``), outside every timed span;
* a torch function or dispatch mode left active after a call runs the candidate's code
  on every tensor operation of the judge's that reads the outputs.

Detection (child): right after ``harness.allocate``, before any of the call's candidate
code runs, :func:`record` notes every allocated output tensor: the object, and its data
pointer, its storage's, its storage offset, shape, strides, dtype and device (a few
ints). After the call, in every correctness run and every timed call, and before anything
reads the outputs, :func:`settle` checks each allocated output is the same object, still
exactly ``torch.Tensor``, with the same memory and layout, and that every value the call
added (what the entry point returned: ``outputs["result"]``) is plain: exactly
``torch.Tensor``, ``list``, ``tuple``, ``dict``, a plain scalar or string, None. It returns
the outputs the judge may read: each tensor a fresh alias (``Tensor.detach`` taken from the
class, so no attribute the candidate set on the object is ever called), every container
rebuilt, and in place of what is not plain, None. It reads with torch's function and
dispatch modes disabled (:func:`plain_reads`), so no candidate code runs while it does. Its
sentences travel as ``objects`` in each run's checks
(:class:`~geak_evaluator_triton.protocol.RunChecks`) and in each ``block``
(:class:`~geak_evaluator_triton.protocol.BlockFrame`).

Interpretation (judge, :func:`report`): any sentence rejects the candidate (stage
``anticheat``), reported once; the outputs of such a run are not compared
(:func:`rejects_outputs`): they are not what the call computed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict

MAX_DEPTH = 64  # as deep as the frames' encoding (``tensorio``) goes
MAX_PROBLEMS = 5  # sentences per call, at most
LAYOUT_FIELDS = ("data pointer", "storage", "storage offset", "shape", "strides", "dtype", "device")
PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)


class Allocation(NamedTuple):
    """What :func:`record` noted of freshly allocated outputs."""

    keys: frozenset[Any]  # the top-level names ``allocate`` gave (what the call adds is returned)
    tensors: tuple[tuple[str, Any, tuple[Any, ...]], ...]  # (path, the tensor, its layout)
    modes: tuple[int, int]  # torch function / dispatch modes active then


class plain_reads:  # noqa: N801 (used as a context manager, like torch's own)
    """Torch's function handling (subclasses' ``__torch_function__`` and function modes) and
    its Python dispatch (``__torch_dispatch__``, dispatch modes) off: what runs inside calls
    torch's own kernels only. Both managers exist throughout torch 2.x
    (``torch._C.DisableTorchFunction``, ``torch._C._DisableTorchDispatch``); one that is
    missing is left out."""

    __slots__ = ("_entered",)
    _managers: tuple[Any, ...] | None = None

    def __enter__(self) -> None:
        managers = plain_reads._managers
        if managers is None:
            import torch

            managers = tuple(getattr(torch._C, name) for name in ("DisableTorchFunction", "_DisableTorchDispatch")
                             if hasattr(torch._C, name))
            plain_reads._managers = managers
        self._entered = [manager() for manager in managers]
        for manager in self._entered:
            manager.__enter__()

    def __exit__(self, *exc: Any) -> None:
        for manager in reversed(self._entered):
            manager.__exit__(None, None, None)


def _modes() -> tuple[int, int]:
    import torch

    counts = []
    for name in ("_len_torch_function_stack", "_len_torch_dispatch_stack"):
        length = getattr(torch._C, name, None)
        counts.append(int(length()) if length is not None else 0)
    return counts[0], counts[1]


def _layout(tensor: Any) -> tuple[Any, ...]:
    """Where ``tensor`` (exactly ``torch.Tensor``) lives and how it is laid out, read through
    the class's own methods (an attribute set on the object is not looked at)."""
    import torch

    try:
        storage = torch.Tensor.untyped_storage(tensor).data_ptr()
    except RuntimeError:  # a tensor without storage (none a harness allocates)
        storage = -1
    return (torch.Tensor.data_ptr(tensor), storage, torch.Tensor.storage_offset(tensor),
            tuple(tensor.shape), tuple(torch.Tensor.stride(tensor)), tensor.dtype, tensor.device)


def _tensors(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, tensor) of every tensor in what ``allocate`` made (trusted: the harness's)."""
    import torch

    if depth > MAX_DEPTH:
        return
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _tensors(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _tensors(item, f"{path}[{index}]", depth + 1)


def record(outputs: Any) -> Allocation:
    """Note the freshly allocated ``outputs`` (right after ``allocate``, before the call)."""
    with plain_reads():
        tensors = tuple((path, tensor, _layout(tensor)) for path, tensor in _tensors(outputs, ""))
    keys = frozenset(outputs) if type(outputs) is dict else frozenset()
    return Allocation(keys, tensors, _modes())


def _name(value: Any) -> str:
    """``value``'s type by name, read from ``type``'s own descriptors (a metaclass of the
    candidate's cannot answer instead)."""
    kind = type(value)
    qualname = type.__dict__["__qualname__"].__get__(kind, type)
    module = type.__dict__["__module__"].__get__(kind, type)
    return qualname if module == "builtins" else f"{module}.{qualname}"


def _shown(path: str) -> str:
    return repr(path) if path else "the outputs"


_PLAIN_TYPES: list[frozenset[int]] = []


def _plain_types() -> frozenset[int]:
    """The ids of the types whose values are read without running code of theirs: Python's
    scalars and strings, torch's dtype, device and Size, NumPy's numeric scalars. Compared by
    identity: ``==`` or a hash of a type could run its metaclass's code."""
    if not _PLAIN_TYPES:
        import torch

        kinds: list[type] = [*PLAIN_SCALARS, torch.dtype, torch.device, torch.Size]
        try:
            import numpy as np

            kinds += [t for t in set(np.sctypeDict.values()) if issubclass(t, (np.number, np.bool_))]
        except ImportError:
            pass
        _PLAIN_TYPES.append(frozenset(id(kind) for kind in kinds))
    return _PLAIN_TYPES[0]


class _Settler:
    """One call's outputs made plain, with what was wrong with them."""

    def __init__(self, allocated: dict[str, tuple[Any, tuple[Any, ...]]]) -> None:
        import torch

        self.tensor_type = torch.Tensor
        self.allocated = allocated
        self.seen: set[str] = set()
        self.problems: list[str] = []
        self.plain = _plain_types()
        self.scalar_keys = frozenset(id(kind) for kind in PLAIN_SCALARS)
        try:
            import numpy as np

            self.ndarray: Any = np.ndarray
        except ImportError:
            self.ndarray = None

    def problem(self, sentence: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(sentence)

    def tensor(self, value: Any, path: str) -> Any:
        mine = self.allocated.get(path)
        if mine is not None:
            self.seen.add(path)
            if value is not mine[0]:
                self.problem(f"output {_shown(path)} is not the buffer the judge allocated: it was "
                             f"replaced by a {_name(value)}")
                return None
        if type(value) is not self.tensor_type:
            self.problem(f"output {_shown(path)} is a {_name(value)}, not a plain torch.Tensor"
                         + (" (its class was changed)" if mine is not None else "")
                         + ": an object of the candidate's runs its own code when the judge reads it")
            return None
        if mine is not None:
            now = _layout(value)
            changed = [field for field, a, b in zip(LAYOUT_FIELDS, mine[1], now, strict=True) if a != b]
            if changed:
                self.problem(f"output {_shown(path)} no longer is the memory the judge allocated: its "
                             f"{', '.join(changed)} changed (re-pointed at memory of the candidate's)")
                return None
        return self.tensor_type.detach(value)

    def value(self, value: Any, path: str, depth: int) -> Any:
        kind = type(value)
        if depth > MAX_DEPTH:
            self.problem(f"output {_shown(path)} nests deeper than {MAX_DEPTH} levels")
            return None
        # ``issubclass`` on ``type(value)``, never ``isinstance``: that asks the object its
        # ``__class__``, which an object of the candidate's answers with code of its own.
        if issubclass(kind, self.tensor_type) or path in self.allocated:
            return self.tensor(value, path)
        if id(kind) in self.plain:
            return value
        if kind is self.ndarray and value.dtype.kind in "biufc":
            return value
        if kind is dict:
            out = {}
            for key, item in value.items():
                if id(type(key)) not in self.scalar_keys:
                    self.problem(f"output {_shown(path)} has a key of type {_name(key)}, not a plain "
                                 "scalar or string")
                    continue
                out[key] = self.value(item, f"{path}.{key}" if path else str(key), depth + 1)
            return out
        if kind is list or kind is tuple:
            items = [self.value(item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value)]
            return items if kind is list else tuple(items)
        self.problem(f"output {_shown(path)} is a {_name(value)}, not a plain torch.Tensor (nor a "
                     "list, tuple or dict of them, a plain scalar, string or None): an object of the "
                     "candidate's runs its own code when the judge reads it")
        return None


def settle(outputs: Any, allocation: Allocation) -> tuple[Any, list[str]]:
    """After a call: (the outputs the judge may read, what is wrong with them, as sentences).

    Every allocated output must be the object :func:`record` noted, exactly
    ``torch.Tensor``, on the same memory with the same layout; everything else in
    ``outputs`` (what the call returned) must be plain. What is not is None in the
    outputs returned."""
    settler = _Settler({path: (tensor, layout) for path, tensor, layout in allocation.tensors})
    modes = _modes()
    if modes != allocation.modes:
        # Any torch operation of the judge's on the outputs would run the candidate's mode.
        kinds = [kind for kind, before, now in zip(("function", "dispatch"), allocation.modes, modes, strict=True)
                 if now != before]
        settler.problem(f"left a torch {' and '.join(kinds)} mode active after the call (it runs on every "
                        "tensor operation, the judge's reading of the outputs too)")
    with plain_reads():
        plain = settler.value(outputs, "", 0)
    missing = [path for path in settler.allocated if path not in settler.seen]
    for path in missing[:MAX_PROBLEMS]:
        settler.problem(f"output {_shown(path)}, allocated by the judge, is gone from the outputs")
    return plain, settler.problems


def rejects_outputs(checks: Any) -> bool:
    """Whether a run's checks (:class:`~geak_evaluator_triton.protocol.RunChecks`) say its
    outputs are not what the judge may compare."""
    return isinstance(checks, dict) and bool(checks.get("objects"))


def report(verdict: Verdict, when: str, problems: list[str]) -> None:
    """Reject when the outputs of a call (``when``: a run, a timed case) were not the objects
    the judge allocated or plain values."""
    if problems:
        verdict.fail("anticheat", f"{when}, the candidate's outputs are not plain results: "
                     f"{'; '.join(problems[:3])}", key="output_objects")
