"""The generator: prompts that ask for new code.

* ``generate``: the task, the retrieved examples and the knowledge packs;
* ``restart``: the same after a debugging trap, listing the abandoned strategies
  (template ``strategy``);
* ``optimize``: the optimizer's archive of correct versions, slowest first
  (template ``optimize``, with the optimizer's ``context`` as variables), and what
  the lineage's latest tunings found (``tuning``: ``TuningReport``s, the knobs a
  faster variant changed, one per line) and what the profiler found of the version it
  improves on (``profile``: ``profiling.profile_view``, None where not profiled).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.components import GeneratorBase, RoundContext
from geak_core.api.llm import Message
from geak_core.api.profiling import profile_view


class GeakGenerator(GeneratorBase):
    def __init__(self, options: Any = None) -> None:
        pass

    def messages(self, round: RoundContext) -> list[Message]:
        common = {"task": round.view, "knowledge": round.knowledge, "hardware": round.hardware,
                  "examples": round.examples, "example": round.examples[0] if round.examples else None}
        kind = round.plan.kind
        if kind == "optimize":
            user = round.render("optimize", **common, **round.optimizer, tuning=round.tuning,
                                profile=profile_view(round.profile) if round.profile else None)
        else:
            user = round.render("strategy" if kind == "restart" else "generate",
                                abandoned=list(round.lineage.abandoned), **common)
        return [Message("system", round.system), Message("user", user)]
