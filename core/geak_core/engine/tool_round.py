"""A round held as a conversation (``GeneratorBase.converse``): the ``ToolSession`` the agent
lends the generator, with the judge's tools bound to the round's task and to the run.

* **Turns.** Each ``ask`` is one recorded LLM call under the round's slot and the turn's
  number (``turn``, from 0): a resumed run is served every turn it recorded, so no request
  is made twice; each turn counts against ``[run] max_llm_calls`` (and tokens, dollars).
* **Tools.** ``engine.tools``' functions (``show_task``, ``judge``, and ``profile`` and
  ``tune`` where a profiler is usable and a tuner installed: ``tools.recipe_tooling``), with
  their schemas and their one validation path, bound to the round's task, over the run's
  judge as a tuner sees it (``agent.StoredJudge``). The code a call gives is a candidate of
  the run, ``<task>/L<lineage>/I<iteration>/T<n>`` (``n``: the call's number in the round),
  origin ``tool``, its parent the round's previous draft (else the candidate the round
  builds on); its verdict is stored and served like any other (a resume judges nothing
  twice), and so are a tuning's variants.
* **Record.** Every call and its result is a ``tool_call`` event of the round: its number,
  turn, tool and arguments (the code only as its length: it is the draft's), the draft it
  made, the result the model was sent, whether that was an error or a refusal, the seconds
  the tool took, and with a turn's first call what the model said beside its calls. A resumed run serves a recorded call from its event, without
  running the tool again; ``runs log`` shows the events under the round's candidate.
* **Budget.** A call runs only while ``[run] max_tool_calls`` and ``max_tool_seconds`` last
  (``recording.Budget``); a spent budget stops the run as a spent LLM budget does. A call
  refused by the generator's own limits costs nothing.
"""

from __future__ import annotations

import json
import re
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from geak_core.api.components import TOOL_DRAFT, EvaluatorBase, ToolOutcome
from geak_core.api.extract import extract_code
from geak_core.api.llm import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import Task
from geak_core.engine.recording import RunStopped, request_seed
from geak_core.engine.tools import Profiling, Progress, Suites, ToolError, ToolSet, Tuning

if TYPE_CHECKING:
    from geak_core.api.lineage import LineageState
    from geak_core.engine.agent import Agent

# The tools a conversing round offers, where they can run.
ROUND_TOOLS = ("show_task", "judge", "profile", "tune")
# What a stored event keeps of arguments that were not a JSON object, at most.
CLIP_CHARS = 2000
_STRATEGY_LABEL = re.compile(r"^[#>*_ \t]*strategy[*_ \t]*:[*_ \t]*", re.IGNORECASE)


@dataclass(frozen=True)
class Draft:
    """A code the model had judged in a round, with its verdict."""

    candidate: Candidate
    result: EvalResult


def strategy_line(text: str) -> str:
    """What the model said beside a call, as a candidate's strategy: its first line that says
    anything, without a ``Strategy:`` label, at most 200 characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return _STRATEGY_LABEL.sub("", line)[:200]


def shown_arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as its event keeps them: a code only as its length in lines (the
    code is the draft's), arguments that were not a JSON object as written (clipped)."""
    if call.invalid_arguments is not None:
        return {"invalid": call.invalid_arguments[:CLIP_CHARS]}
    return {key: (f"<{len(value.splitlines())} lines>" if key == "code" and isinstance(value, str) else value)
            for key, value in call.arguments.items()}


class RoundTools(ToolSet):
    """The tools of one conversing round: ``suite`` and ``task`` bound to its task, a judged
    code a draft of the round (``ToolRound.draft``), each verdict remembered by the round."""

    def __init__(self, session: ToolRound, judge: EvaluatorBase, tuning: Tuning | None,
                 profiling: Profiling | None) -> None:
        task = session.task
        self.session = session
        super().__init__(judge, Suites({task.suite: lambda: [task]}), hardware=session.agent.hardware,
                         tuning=tuning, profiling=profiling, bound={"suite": task.suite, "task": task.id},
                         offered=ROUND_TOOLS)

    def draft(self, task: Task, code: str) -> Candidate:
        return self.session.draft(code)

    def verdict(self, task: Task, candidate: Candidate, progress: Progress | None) -> EvalResult:
        result = super().verdict(task, candidate, progress)
        self.session.drafts.append(Draft(candidate, result))
        return result


class ToolRound:
    """The ``ToolSession`` of one round of ``state``'s lineage (``kind``: the policy's plan),
    judging with ``judge`` (the run's, as ``StoredJudge`` wraps it)."""

    def __init__(self, agent: Agent, state: LineageState, iteration: int, kind: str, judge: EvaluatorBase,
                 tuning: Tuning | None, profiling: Profiling | None) -> None:
        self.agent = agent
        self.state = state
        self.task = state.task
        self.iteration = iteration
        self.kind = kind
        self.toolset = RoundTools(self, judge, tuning, profiling)
        self.tools = [ToolSpec(s.name, s.description, s.input_schema) for s in self.toolset.specs()]
        self.turns = 0
        self.calls = 0  # calls answered so far: the next one's number is calls + 1
        self.call_ids: list[str] = []  # the LLM call of each turn
        self.said = ""  # what the model said in the latest turn
        self._said_in: int | None = None  # the turn whose words an event holds already
        self.drafts: list[Draft] = []

    # -- the session -------------------------------------------------------------------------

    def ask(self, messages: list[Message], tool_choice: str = "auto") -> ChatResponse:
        state = self.state
        seed = request_seed(self.agent.recipe.run.seed, self.task.key, state.lineage, self.iteration)
        request = ChatRequest(messages=list(messages), seed=seed, meta={"purpose": self.kind},
                              tools=list(self.tools), tool_choice=tool_choice)
        slot = {"task": self.task.key, "lineage": state.lineage, "iteration": self.iteration,
                "purpose": self.kind, "turn": self.turns}
        self.turns += 1
        call_id, response = self.agent.llm.complete(request, slot)
        self.call_ids.append(call_id)
        self.said = response.texts[0] if response.texts else ""
        return response

    def call(self, call: ToolCall) -> ToolOutcome:
        self.calls += 1
        recorded = self.agent.recorded_tool_calls.get(self._key())
        if recorded is not None and recorded.get("tool") == call.name and not recorded.get("refused"):
            return self._replay(recorded)
        self.agent.budget.check_tools()
        made = len(self.drafts)
        started = time.monotonic()
        try:
            if call.invalid_arguments is not None:
                raise ToolError(f"the arguments are not a JSON object: {call.invalid_arguments[:200]!r}")
            content, is_error = json.dumps(self.toolset.call(call.name, call.arguments), default=str), False
        except ToolError as exc:
            content, is_error = f"error: {exc}", True
        except RunStopped:
            raise
        except Exception as exc:  # the tool's own fault: said to the model, kept, and the round goes on
            content, is_error = f"error: the tool failed: {type(exc).__name__}: {exc}", True
            self.agent.store.event("error", {"traceback": traceback.format_exc()}, task_id=self.task.id)
        seconds = time.monotonic() - started
        if self.agent.interrupted.is_set():
            raise RunStopped()  # judged while stopping (its child killed): a resume runs the call again
        self.agent.budget.add_tool(seconds)
        draft = self.drafts[made] if len(self.drafts) > made else None
        return self._answer(call, content, is_error, seconds, draft)

    def refuse(self, call: ToolCall, reason: str) -> ToolOutcome:
        self.calls += 1
        return self._answer(call, f"error: not run: {reason}", True, 0.0, None, refused=reason)

    # -- drafts and the round's candidate ----------------------------------------------------

    def draft(self, code: str) -> Candidate:
        """The candidate of a code the model gave the current call: the round's next draft."""
        state = self.state
        parent = self.drafts[-1].candidate.id if self.drafts else (state.last.id if state.last else None)
        return Candidate(f"{self.task.id}/L{state.lineage}/I{self.iteration}/T{self.calls}", self.task.id, code,
                         state.lineage, self.iteration, TOOL_DRAFT, strategy_line(self.said), parent,
                         self.call_ids[-1] if self.call_ids else None)

    def chosen(self, reply: str) -> tuple[str | None, str]:
        """The round's code and strategy, given the model's final ``reply``: its last draft
        the judge found correct, else the code of the reply, else its last draft; (None, "")
        when there is none."""
        correct = [d for d in self.drafts if d.result.correct]
        if correct:
            return correct[-1].candidate.code, correct[-1].candidate.strategy
        found = extract_code(reply, [e.name for e in self.task.entry_points])
        if found is not None:
            return found.code, found.strategy or ""
        if self.drafts:
            return self.drafts[-1].candidate.code, self.drafts[-1].candidate.strategy
        return None, ""

    @property
    def last_call_id(self) -> str | None:
        return self.call_ids[-1] if self.call_ids else None

    # -- records -----------------------------------------------------------------------------

    def _key(self) -> tuple[str, int, int, int]:
        return self.task.id, self.state.lineage, self.iteration, self.calls

    def _answer(self, call: ToolCall, content: str, is_error: bool, seconds: float, draft: Draft | None,
                refused: str | None = None) -> ToolOutcome:
        payload: dict[str, Any] = {
            "index": self.calls, "turn": self.turns - 1, "call_id": call.id, "tool": call.name,
            "arguments": shown_arguments(call), "candidate": draft.candidate.id if draft else None,
            "result": content, "is_error": is_error, "seconds": round(seconds, 3)}
        if refused is not None:
            payload["refused"] = refused
        if self._said_in != self.turns - 1 and self.said.strip():  # the turn's words, with its first call
            payload["said"] = self.said
        self._said_in = self.turns - 1
        self.agent.store.event("tool_call", payload, task_id=self.task.id, lineage=self.state.lineage,
                               iteration=self.iteration)
        return self._told(payload, draft)

    def _replay(self, payload: dict[str, Any]) -> ToolOutcome:
        """A call recorded before the run was stopped, served from its event; its draft, if it
        made one, read back from the store."""
        self._said_in = self.turns - 1
        draft = None
        if payload.get("candidate"):
            store = self.agent.store
            code = next((c for c in store.candidates(self.task.id) if c.id == payload["candidate"]), None)
            verdict = dict(store.evaluations(self.task.id)).get(payload["candidate"])
            if code is not None and verdict is not None:
                draft = Draft(code, verdict)
                self.drafts.append(draft)
        return self._told(payload, draft)

    def _told(self, payload: dict[str, Any], draft: Draft | None) -> ToolOutcome:
        """The outcome of a stored call, counted for the summary and said on the progress line."""
        self.agent.tool_tally.add(payload, draft)
        assert self.agent.progress is not None
        self.agent.progress.line(f"[{self.task.id}] L{self.state.lineage} I{self.iteration} {'tool':<8} -> "
                                 f"{payload['tool']} (call {payload['index']}): {describe_call(payload, draft)}")
        return ToolOutcome(str(payload["result"]), bool(payload["is_error"]), float(payload["seconds"]))


def describe_call(payload: dict[str, Any], draft: Draft | None) -> str:
    """One line: what a tool call came to (a draft's verdict, an error, a refusal)."""
    if payload.get("refused"):
        return f"refused: {payload['refused']}"
    if payload.get("is_error"):
        return str(payload["result"]).splitlines()[0][:160]
    if draft is None:
        return f"answered in {payload['seconds']:.1f} s"
    result = draft.result
    verdict = "correct" if result.correct else f"{result.failed_stage}: {(result.reason or '').splitlines()[0][:120]}"
    return f"{draft.candidate.id} {verdict} ({payload['seconds']:.1f} s)"


class ToolTally:
    """What the run's conversing rounds did with their tools, for its summary
    (``RunSummary.tools``); a resumed run counts its replayed calls again, so that its summary
    is an uninterrupted run's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rounds = self.calls = self.errors = self.refused = self.drafts = self.drafts_correct = 0
        self.seconds = 0.0
        self.by_tool: Counter[str] = Counter()

    def add(self, payload: dict[str, Any], draft: Draft | None) -> None:
        with self.lock:
            self.calls += 1
            self.by_tool[str(payload["tool"])] += 1
            if payload.get("refused"):
                self.refused += 1
                return
            self.errors += int(bool(payload.get("is_error")))
            self.seconds += float(payload.get("seconds") or 0.0)
            if draft is not None:
                self.drafts += 1
                self.drafts_correct += int(draft.result.correct)

    def round(self) -> None:
        with self.lock:
            self.rounds += 1

    def summary(self, generator: str) -> dict[str, Any]:
        with self.lock:
            return {"generator": generator, "rounds": self.rounds, "calls": self.calls, "errors": self.errors,
                    "refused": self.refused, "seconds": round(self.seconds, 3),
                    "by_tool": dict(sorted(self.by_tool.items())), "drafts": self.drafts,
                    "drafts_correct": self.drafts_correct}


__all__ = ["ROUND_TOOLS", "Draft", "RoundTools", "ToolRound", "ToolTally", "describe_call", "shown_arguments"]
