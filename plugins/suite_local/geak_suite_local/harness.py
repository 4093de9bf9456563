"""The harness of every task in KernelBench's format (the ``local`` and ``kernelbench`` suites).

For each case (an input set of the task file, at one dtype) and seed, in each of the
judge's children:

* ``make_inputs``: the task file's module-level sizes set to the case's input set, torch
  seeded with the seed, then ``get_inputs()`` called with the judge's device as torch's
  default device (so a gigabyte input is drawn where it is used, identically in every
  process on the same kind of device); floating tensors cast to the case's dtype;
* ``run``: the module's ``ModelNew`` built once per module and case (torch seeded with
  KernelBench's 42 right before, as for the reference, so layers declared alike start from
  the same weights; built on the CPU, then moved and cast, as KernelBench does), then
  called on the inputs; its result (a tensor or a tuple of tensors) becomes the outputs
  ``output`` (one tensor) or ``output0``, ``output1``, ... Each must be a plain
  ``torch.Tensor``: a subclass or any other object is an error with its type named,
  since a tensor subclass can run code of the candidate's when the judge reads it.

The reference module is a copy of the task file with ``ModelNew = Model`` appended (the
suite writes it); a user's own ``ModelNew`` in the task file is the timing baseline,
whose PyTorch eager equivalent, ``Model``, is :meth:`ModelHarness.eager`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from geak_core.api.harness import Harness
from geak_core.api.tasks import Case, Task

from geak_suite_local.loading import (
    INIT_SEED,
    cast,
    forward_inputs,
    import_file,
    init_inputs,
    output_list,
    overridden,
)
from geak_suite_local.modelfile import CANDIDATE_CLASS, REFERENCE_CLASS

OUTPUT = "output"


def output_names(count: int) -> list[str]:
    return [OUTPUT] if count == 1 else [f"{OUTPUT}{i}" for i in range(count)]


class ModelHarness(Harness):
    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.file = task.extra["file"]
        self._task_module: Any = None
        self._models: dict[tuple[int, str], tuple[Any, Any]] = {}
        self._device = "cpu"

    # -- the task file ------------------------------------------------------------

    def _module(self) -> Any:
        if self._task_module is None:
            digest = hashlib.sha256(self.file.encode()).hexdigest()[:12]
            self._task_module = import_file(self.file, f"geak_task_{digest}")
        return self._task_module

    def _case_data(self, case: Case) -> tuple[dict[str, Any], Any]:
        import torch

        return dict(case.params.get("overrides") or {}), getattr(torch, case.params["dtype"])

    # -- the contract ---------------------------------------------------------------

    def cases(self, mode: str) -> list[Case]:
        key = "small_cases" if mode == "small" else "cases"
        cases = []
        for spec in self.task.extra[key]:
            cases.append(Case(
                name=spec["name"],
                params={"overrides": spec["overrides"], "dtype": spec["dtype"]},
                bytes=spec.get("bytes"),
                dtype=spec["dtype"],
                note=spec.get("note", ""),
            ))
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        self._device = device
        overrides, dtype = self._case_data(case)
        module = self._module()
        torch.manual_seed(int(seed))
        with overridden(module, overrides), torch.device(device):
            values = forward_inputs(module, self.file)
        inputs = {}
        for index, value in enumerate(values):
            value = cast(value, dtype)
            if isinstance(value, torch.Tensor) and value.device.type != torch.device(device).type:
                value = value.to(device)
            inputs[f"arg{index}"] = value
        return inputs

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        """Nothing: the model allocates its outputs and returns them."""
        return {}

    def _model(self, factory: Any, owner: Any, case: Case) -> Any:
        """``factory(*get_init_inputs())`` for ``owner`` (a module) and the case, built once."""
        import torch

        key = (id(owner), case.name)
        hit = self._models.get(key)
        if hit is not None and hit[0] is owner:
            return hit[1]
        overrides, dtype = self._case_data(case)
        module = self._module()
        with overridden(module, overrides):
            init = init_inputs(module, self.file)
        torch.manual_seed(INIT_SEED)
        model = factory(*init).to(device=self._device)
        if dtype != torch.float32:
            model = model.to(dtype=dtype)
        self._models[key] = (owner, model)  # the owner kept alive: ids stay unique
        return model

    def _forward(self, owner: Any, name: str, case: Case, inputs: dict[str, Any],
                 outputs: dict[str, Any]) -> None:
        """``owner.<name>``'s model (built once) called on the case's inputs, into ``outputs``."""
        model = self._model(getattr(owner, name), owner, case)
        result = model(*[inputs[f"arg{i}"] for i in range(len(inputs))])
        self._store(result, outputs, f"{name} of {os.path.basename(self.file)}")

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        self._forward(module, CANDIDATE_CLASS, case, inputs, outputs)

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        """The reference ``Model``: PyTorch eager, beside a user's own Triton ``ModelNew``."""
        outputs: dict[str, Any] = {}
        self._forward(self._module(), REFERENCE_CLASS, case, inputs, outputs)
        return outputs

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(
            "tasks in KernelBench's format have no independent oracle: the reference Model's "
            "outputs are the expectation"
        )

    @staticmethod
    def _store(result: Any, outputs: dict[str, Any], where: str) -> None:
        import torch

        values = output_list(result, where)
        for name, value in zip(output_names(len(values)), values, strict=True):
            if type(value) is not torch.Tensor:
                raise TypeError(f"{where}: forward() returned a {type(value).__module__}."
                                f"{type(value).__qualname__}, not a plain torch.Tensor")
            outputs[name] = value.detach()
