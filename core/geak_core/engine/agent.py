"""The GEAK agent loop: rounds of prompt, reply, judgement, for every task and lineage.

For each task, ``lineages`` independent lineages (parallel scaling) run for up
to ``iterations`` rounds (sequential scaling). The GEAK modules are components
chosen in the recipe, like every other choice:

* the **policy** (``[policy]``) decides each round's kind from the lineage's
  state: ``generate``, ``reflect``, ``optimize`` or ``restart`` (the
  debugging trap), and advances the state with the round's verdicts;
* the **generator** (``[generator]``) writes the prompts that ask for new code
  (generate, restart, optimize), the **reflector** (``[reflector]``) the
  prompts that ask for a fix, and keeps the lineage's memory of failures; a
  generator that converses (``needs_tool_calling``: ``[generator] name =
  "tools"``) then holds each round as a conversation in which the model calls
  the judge's tools (``engine.tool_round``), its round's candidate the last draft
  the judge found correct;
* the **optimizer** (``[optimizer]``) keeps the archive an optimisation prompt
  shows and says how many proposals one step asks for;
* the **retriever** (``[retriever]``) gives examples to the rounds named in
  ``[retriever] rounds``: by the task's instruction on generate and restart
  rounds, by the failed code on reflect rounds, by the best code on optimize
  rounds;
* the **tuner** (``[tuner]``) searches the launch configuration of a round's
  correct candidates (each, or only a new lineage best: ``[tuner] when``) within
  the task's budget (``[tuner] candidates`` and ``seconds``, over all its
  lineages). Its variants are judged by the run's judge and stored as candidates
  (``origin = "tune"``, ``parent_id`` the tuned one) that count like any other; a
  faster one is offered to the optimizer and handed to the policy (a ``tune``
  plan), and what it changed goes into the lineage's next optimize prompt. A
  candidate whose speed the judge did not measure (the interpreter on a CPU) is
  not tuned, and the run says so (a line per candidate and the summary);
* the **profiler** (``[profiler]``) explains a round's correct candidates (each, or only a
  new lineage best: ``[profiler] when``) with the hardware's counters: the judge runs the
  candidate under the tool (``EvaluatorBase.profile``) within ``[profiler] seconds`` and
  the engine reads the bottleneck from the counters (``geak_core.engine.profiling``). The
  diagnosis goes into the lineage's next optimize and reflect prompts (unless ``[profiler]
  in_prompts = false``) and to the optimizer; a lineage whose candidate runs at its bound's
  peak (``[profiler] stop_at_peak_fraction``) optimizes no more, and says why. A candidate
  the judge did not time is not profiled, and a profile that fails is recorded with its
  reason; neither stops the lineage.

This module keeps the loop only. Recorded, resumable, budgeted LLM calls live
in ``geak_core.engine.recording``, the lineage state in ``geak_core.api.lineage``, the
display in ``geak_core.engine.progress``, summaries in ``geak_core.engine.report`` and
``geak_core.api.scaling``.

Every LLM call and evaluation is stored under a *slot* (task, lineage,
iteration, purpose). Resuming a run replays the loop and serves recorded slots
from the store, so nothing already paid for or judged is repeated, and the
final summary equals that of an uninterrupted run. A finished tuning is stored
as a ``tuned`` event of its round (the variants judged, the one kept, the notes,
the seconds spent) and replayed from it without calling the tuner; one cut short
is run again, its variants already judged served from the store. A profile is stored
as a ``profiled`` event (the ``ProfileRecord``) and replayed from it without profiling again.

Reproducibility: each request carries a seed derived from ``[run] seed`` and
its slot (``request_seed``), so lineages sample independently and a rerun asks
exactly the same questions; the agent itself draws nothing at random, and its
order-dependent choices (the best of equal candidates) follow lineage and
iteration order, never thread timing. The judge's secret seeds are the
evaluator's own and do not come from ``[run] seed``.
"""

from __future__ import annotations

import dataclasses
import difflib
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.components import (
    COMPONENT_KINDS,
    TUNE_KIND,
    EvalJob,
    EvaluatorBase,
    Example,
    HardwareProfile,
    KnowledgeContext,
    RetrievalQuery,
    RoundContext,
    RoundPlan,
    TuningReport,
    as_component,
)
from geak_core.api.errors import GeakError, InputError, OptionError, RecipeError, RecipeProblem
from geak_core.api.extract import extract_code
from geak_core.api.lineage import LineageState
from geak_core.api.llm import ChatRequest, FatalLLMError, LLMError, Message
from geak_core.api.model import Attempt, Candidate, EvalResult, RunSummary, TaskSummary
from geak_core.api.profiling import ProfileRecord, bound_line, counters_text
from geak_core.api.scaling import best_speedups, run_speedup_method, sequential_scaling
from geak_core.api.tasks import Task
from geak_core.engine.hardware import resolve_profile, visible_device
from geak_core.engine.plugins import PluginManager
from geak_core.engine.profiling import profile_candidate, roofline_stop, unprofiled_reason
from geak_core.engine.progress import CandidateJudged, Echo, Progress
from geak_core.engine.prompts import PromptRenderer
from geak_core.engine.recipe import (
    ProfilerSection,
    Recipe,
    TunerSection,
    dotted,
    dump_toml,
    options_to_dict,
)
from geak_core.engine.recording import (
    Budget,
    BudgetExhausted,
    RecordedLLM,
    RunStopped,
    request_seed,
)
from geak_core.engine.report import (
    format_outcome,
    format_summary,
    is_scripted,
    summarize_run,
    summarize_task,
)
from geak_core.engine.selection import category_problems, in_categories
from geak_core.engine.store import (
    RECIPE_FILE,
    SUMMARY_FILE,
    Heartbeat,
    RunLock,
    RunStore,
    environment_manifest,
    owner_record,
    resolve_run,
)
from geak_core.engine.tool_round import ToolRound, ToolTally
from geak_core.engine.tools import recipe_tooling
from geak_core.engine.tuning import (
    TuneLedger,
    kept_variant,
    knob_lines,
    measured_speedup,
    prompt_knobs,
    untimed_reason,
)

# What an optimize prompt shows of the lineage's tunings: the latest ones that judged
# something, and at most so many changed knobs of each (prompts stay short).
PROMPT_TUNINGS = 2
PROMPT_KNOBS = 8


def extract_candidate_code(reply: str, required_names: list[str]) -> tuple[str | None, str]:
    """(code or None, strategy text) from one model reply."""
    found = extract_code(reply, required_names=required_names)
    if found is None:
        return None, ""
    return found.code, (found.strategy or "")


class Agent:
    def __init__(self, recipe: Recipe, plugins: PluginManager, store: RunStore, echo: Echo,
                 prepared: Prepared | None = None):
        self.recipe = recipe
        self.plugins = plugins
        self.store = store
        self.echo = echo
        # what the run needs before its first LLM call (``prepare``): its components, the
        # judge the executor built, the tasks, the hardware, knowledge packs and prompts
        self.prepared = prepared if prepared is not None else prepare(recipe, plugins)
        built = self.prepared.components
        self.components: dict[str, Any] = built
        self.suite = built["suite"]
        self.evaluator = built["evaluator"]
        self.retriever = built["retriever"]
        self.optimizer = built["optimizer"]
        self.generator = built["generator"]
        self.reflector = built["reflector"]
        self.policy = built["policy"]
        self.tuner = built["tuner"]
        self.tuning_on = recipe.components["tuner"].name != "none"  # core's switch: no tuning
        self.ledgers: dict[str, TuneLedger] = {}
        self.tally = TuningTally()
        self.recorded_tunings = {(e["task_id"], e["lineage"], e["iteration"], e["payload"].get("candidate")):
                                 e["payload"] for e in store.iter_events("tuned")}
        self.profiler = built["profiler"]
        self.profiling_on = recipe.components["profiler"].name != "none"  # core's switch: no profiling
        self.profile_tally = ProfileTally()
        self.recorded_profiles = {(e["task_id"], e["lineage"], e["iteration"], e["payload"].get("candidate")):
                                  e["payload"] for e in store.iter_events("profiled")}
        self.recorded_stops = {(e["task_id"], e["lineage"]) for e in store.iter_events("lineage_stopped")}
        run = recipe.run
        self.budget = Budget.resumed(run.max_llm_calls, run.max_tokens, run.max_cost_usd, store,
                                     max_tool_calls=run.max_tool_calls, max_tool_seconds=run.max_tool_seconds)
        self.llm = RecordedLLM(built["llm"], recipe.components["llm"].name, store, self.budget)
        self.hardware = self.prepared.hardware
        # a conversing generator's tools: the tuner and profilers its ``tune`` and ``profile`` use
        self.tooling = (recipe_tooling(recipe, built, self.hardware, plugins) if self.generator.needs_tool_calling
                        else (None, None))
        self.tool_tally = ToolTally()
        self.recorded_tool_calls = {(e["task_id"], e["lineage"], e["iteration"], e["payload"].get("index")):
                                    e["payload"] for e in store.iter_events("tool_call")}
        self.packs = self.prepared.packs
        self.prompts = self.prepared.prompts
        self.eval_slots = threading.BoundedSemaphore(max(1, int(self.evaluator.max_parallel)))
        self.stop_reason: str | None = None
        self.stop_event = threading.Event()
        self.interrupted = threading.Event()  # Ctrl-C (interrupt)
        self.task_done: dict[str, threading.Event] = {}
        self.progress: Progress | None = None

    # -- helpers -------------------------------------------------------------

    def tasks(self) -> list[Task]:
        return list(self.prepared.tasks)

    def knowledge(self, task: Task) -> list[dict[str, str]]:
        context = KnowledgeContext(task=task, hardware=self.hardware)
        return [{"title": p.title, "text": p.render(context)} for p in self.packs]

    def retrieve(self, state: LineageState, plan: RoundPlan, iteration: int) -> list[Example]:
        """Examples for this round, if ``[retriever] rounds`` names its kind.

        Generate and restart rounds query by the task alone; a reflect round by the
        failed code it fixes; an optimize round by the best correct code.
        """
        if plan.kind not in self.recipe.retriever.rounds:
            return []
        code = None
        if plan.kind == "reflect" and state.last is not None:
            code = state.last.code
        elif plan.kind == "optimize" and state.best is not None:
            code = state.best.code
        examples = self.retriever.retrieve(RetrievalQuery(task=state.task, code=code, k=1))
        self.store.event(
            "retrieved",
            {"examples": [{"id": e.id, "score": e.score, "source": e.source} for e in examples],
             "query": "code" if code else "instruction", "round": plan.kind},
            task_id=state.task.id, lineage=state.lineage, iteration=iteration,
        )
        return examples

    def evaluate_all(self, task: Task, candidates: list[Candidate]) -> list[EvalResult]:
        """Judge several candidates of one round at once (the evaluator's slots bound it)."""
        if len(candidates) <= 1:
            return [self.evaluate(task, c) for c in candidates]
        with ThreadPoolExecutor(max_workers=len(candidates)) as pool:
            return list(pool.map(lambda c: self.evaluate(task, c), candidates))

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        recorded = self.store.find_evaluation(task.id, candidate.code)
        if recorded is not None:
            result = EvalResult.from_dict({**recorded.to_dict(), "candidate_id": candidate.id})
        else:
            with self.eval_slots:
                result = self.evaluator.evaluate(task, candidate)
            if self.interrupted.is_set():
                raise RunStopped()  # judged while stopping (its child killed): not a verdict
        self.store.record_evaluation(candidate, result)
        self.plugins.notify(
            "geak_candidate_evaluated", run_id=self.store.run_id, task=task, candidate=candidate, result=result
        )
        return result

    # -- one round -----------------------------------------------------------

    def round_context(self, state: LineageState, plan: RoundPlan, iteration: int) -> RoundContext:
        """What the generator or reflector may show in this round's prompt."""
        task = state.task
        view = task.prompt_view()
        hw = self.hardware.name if self.hardware else None
        key = f"{task.id}@{state.lineage}"
        return RoundContext(
            plan=plan, task=task, view=view, lineage=state, iteration=iteration,
            system=self.prompts.render("system", task=view, hardware=hw), render=self.prompts.render,
            examples=self.retrieve(state, plan, iteration), knowledge=self.knowledge(task), hardware=hw,
            optimizer=self.optimizer.context(key) if plan.kind == "optimize" else {},
            proposals=max(1, int(self.optimizer.proposals)) if plan.kind == "optimize" else 1,
            tuning=[t for t in state.tunings if t.judged][-PROMPT_TUNINGS:] if plan.kind == "optimize" else [],
            profile=self.prompt_profile(state, plan),
        )

    def prompt_profile(self, state: LineageState, plan: RoundPlan) -> ProfileRecord | None:
        """The profile an optimize or reflect prompt shows: for an optimize round the one of
        the candidate it improves on (else of the lineage's best), for a reflect round the
        lineage's latest; None where there is none, or ``[profiler] in_prompts = false``."""
        if not self.recipe.profiler.in_prompts or plan.kind not in ("optimize", "reflect"):
            return None
        if plan.kind == "optimize":
            return (state.profile_of(state.last.id if state.last else None)
                    or state.profile_of(state.best.id if state.best else None))
        return state.profiles[-1] if state.profiles else None

    def _round(self, state: LineageState, iteration: int) -> None:
        task = state.task
        plan = self.policy.next_round(state)
        kind = plan.kind
        if kind == "restart":
            abandoned = state.restart(iteration)
            self.store.event("restart", {"abandoned": abandoned}, task_id=task.id,
                             lineage=state.lineage, iteration=iteration)
        context = self.round_context(state, plan, iteration)
        author = self.reflector if kind == "reflect" else self.generator
        messages = author.messages(context)
        try:
            if self.generator.needs_tool_calling:
                answered = self._converse(state, context, messages, iteration)
            else:
                answered = self._ask(state, context, messages, iteration)
        except (FatalLLMError, BudgetExhausted) as exc:
            self.stop(str(exc), fatal=isinstance(exc, FatalLLMError))
            raise RunStopped() from exc
        except LLMError as exc:  # retries exhausted: count as a failed round, keep going
            state.attempts.append(Attempt(task.id, state.lineage, iteration, kind, None, note=f"llm error: {exc}"))
            self.store.event("llm_failed", {"error": str(exc)}, task_id=task.id, lineage=state.lineage,
                             iteration=iteration)
            return
        candidates = [candidate for candidate, _ in answered]
        replies = {candidate.id: reply for candidate, reply in answered}
        results = self._judge_round(task, candidates)
        n = len(candidates)
        for index, candidate in enumerate(candidates):  # proposal order: deterministic outcomes
            result = results[candidate.id]
            if candidate.code:
                self.optimizer.record(f"{task.id}@{state.lineage}", candidate, result)
                if not result.correct:
                    state.reflections.append(self.reflector.remember(
                        iteration, kind, candidate, result, replies[candidate.id]))
            state.record(iteration, kind, candidate, result)
            assert self.progress is not None
            self.progress.candidate_judged(CandidateJudged(
                task.id, state.lineage, iteration, kind, result, proposal=index if n > 1 else None))
        improved = self.policy.after_round(state, plan, [(c, results[c.id]) for c in candidates])
        improved = self.tune_round(state, iteration, candidates, results) or improved
        self.profile_round(state, iteration, candidates, results)
        state.rounds_without_gain = 0 if improved else state.rounds_without_gain + 1

    def _ask(self, state: LineageState, context: RoundContext, messages: list[Message],
             iteration: int) -> list[tuple[Candidate, str]]:
        """The round's candidates, one per completion of one request (``proposals`` of them
        for an optimize round), each with the reply it came from; its code "" where the reply
        holds none."""
        task, kind, n = state.task, context.plan.kind, context.proposals
        seed = request_seed(self.recipe.run.seed, task.key, state.lineage, iteration)
        request = ChatRequest(messages=messages, n=n, seed=seed, meta={"purpose": kind})
        slot = {"task": task.key, "lineage": state.lineage, "iteration": iteration, "purpose": kind}
        call_id, response = self.llm.complete(request, slot)
        names = [e.name for e in task.entry_points]
        origin = "generate" if kind == "restart" else kind
        parent = state.last.id if state.last else None
        answered: list[tuple[Candidate, str]] = []
        for index, reply in enumerate(response.texts[:n] or [""]):
            candidate_id = f"{task.id}/L{state.lineage}/I{iteration}" + (f"/P{index}" if n > 1 else "")
            code, strategy = extract_candidate_code(reply, names)
            answered.append((Candidate(candidate_id, task.id, code or "", state.lineage, iteration, origin,
                                       strategy, parent if code else None, call_id), reply))
        return answered

    def _converse(self, state: LineageState, context: RoundContext, messages: list[Message],
                  iteration: int) -> list[tuple[Candidate, str]]:
        """The round held as a conversation by the generator (``converse``), the model given
        the judge's tools (``engine.tool_round``); its one candidate, with the model's final
        reply: its last draft the judge found correct, else the final reply's code, else its
        last draft (stored already, with its verdict, which the judge therefore serves)."""
        task, kind = state.task, context.plan.kind
        tuning, profiling = self.tooling
        session = ToolRound(self, state, iteration, kind, StoredJudge(self), tuning, profiling)
        reply = self.generator.converse(context, messages, session)
        self.tool_tally.round()
        code, strategy = session.chosen(reply)
        origin = "generate" if kind == "restart" else kind
        parent = state.last.id if state.last else None
        candidate = Candidate(f"{task.id}/L{state.lineage}/I{iteration}", task.id, code or "", state.lineage,
                              iteration, origin, strategy, parent if code else None, session.last_call_id)
        return [(candidate, reply)]

    def _judge_round(self, task: Task, candidates: list[Candidate]) -> dict[str, EvalResult]:
        """The round's candidates stored and judged; one without code fails at ``extract``."""
        results: dict[str, EvalResult] = {}
        for candidate in candidates:
            if candidate.code:
                self.store.record_candidate(candidate)
                continue
            results[candidate.id] = EvalResult(task_id=task.id, candidate_id=candidate.id, failed_stage="extract",
                                               reason="the reply contains no usable code")
            self.store.record_evaluation(candidate, results[candidate.id])
        judged = [c for c in candidates if c.code]
        results.update(zip([c.id for c in judged], self.evaluate_all(task, judged), strict=True))
        return results

    # -- tuning ------------------------------------------------------------------

    def tune_round(self, state: LineageState, iteration: int, candidates: list[Candidate],
                   results: dict[str, EvalResult]) -> bool:
        """Tune the round's correct candidates (all, or the new lineage best: ``[tuner]
        when``); True if a faster variant improved the lineage."""
        if not self.tuning_on:
            return False
        chosen = [c for c in candidates if c.code and results[c.id].call_ok and results[c.id].correct]
        if self.recipe.tuner.when == "best":
            chosen = [c for c in chosen if state.best is not None and c.id == state.best.id]
        improved = False
        for candidate in chosen:
            improved = self.tune(state, iteration, candidate, results[candidate.id]) or improved
        return improved

    def tune(self, state: LineageState, iteration: int, candidate: Candidate, result: EvalResult) -> bool:
        """Tune one correct candidate, or replay its recorded tuning; True if the lineage improved."""
        task = state.task
        recorded = self.recorded_tunings.get((task.id, state.lineage, iteration, candidate.id))
        if recorded is not None:
            payload = recorded
            variants = self._stored_variants(task.id, payload.get("judged", []))
            self.ledgers[task.id].settle(None, len(variants), float(payload.get("seconds", 0.0)))
            self.ledgers[task.id].claim(candidate.hash)
        else:
            payload, variants = self._run_tuner(task, candidate, result)
            self.store.event("tuned", payload, task_id=task.id, lineage=state.lineage, iteration=iteration)
        return self._adopt(state, iteration, candidate, result, payload, variants)

    def _run_tuner(self, task: Task, candidate: Candidate,
                   result: EvalResult) -> tuple[dict[str, Any], list[tuple[Candidate, EvalResult]]]:
        """The tuner's work on ``candidate`` as a ``tuned`` event's payload, and the variants it
        judged with their verdicts (stored by the judge it was given)."""
        ledger = self.ledgers[task.id]
        reason = untimed_reason(result)
        if reason is None and not ledger.claim(candidate.hash):
            reason = "tuning skipped: the same code was tuned before in this task"
        granted = ledger.take() if reason is None else None
        if reason is None and granted is None:
            reason = ledger.spent_note()
        if reason is not None or granted is None:
            return {"candidate": candidate.id, "skipped": reason}, []
        started = time.monotonic()
        try:
            tuned = self.tuner.tune(task, candidate, StoredJudge(self), granted)
        except RunStopped:
            raise
        except Exception as exc:  # the tuner's fault: said, and the lineage goes on untuned
            ledger.settle(granted, 0, time.monotonic() - started)
            self.store.event("error", {"traceback": traceback.format_exc()}, task_id=task.id)
            return {"candidate": candidate.id, "skipped": f"tuning failed: {type(exc).__name__}: {exc}"}, []
        seconds = time.monotonic() - started
        judged = [v for v in tuned.variants if v.result is not None]
        ledger.settle(granted, len(judged), seconds)
        kept = kept_variant(tuned, result)
        payload = {"candidate": candidate.id, "judged": [v.candidate.id for v in judged],
                   "changes": {v.candidate.id: v.changes for v in judged},
                   "kept": kept.candidate.id if kept is not None else None,
                   "diff": kept.diff if kept is not None else "",
                   "notes": list(tuned.notes), "seconds": round(seconds, 3)}
        return payload, [(v.candidate, v.result) for v in judged if v.result is not None]

    def _stored_variants(self, task_id: str, ids: list[str]) -> list[tuple[Candidate, EvalResult]]:
        codes = {c.id: c for c in self.store.candidates(task_id)}
        verdicts = dict(self.store.evaluations(task_id))  # the latest verdict of each
        return [(codes[i], verdicts[i]) for i in ids if i in codes and i in verdicts]

    def _adopt(self, state: LineageState, iteration: int, candidate: Candidate, result: EvalResult,
               payload: dict[str, Any], variants: list[tuple[Candidate, EvalResult]]) -> bool:
        """Count a tuning's variants like any candidate of the round, and go on from the kept one."""
        task = state.task
        assert self.progress is not None
        for variant, verdict in variants:
            state.record(iteration, TUNE_KIND, variant, verdict)
            self.progress.candidate_judged(CandidateJudged(task.id, state.lineage, iteration, TUNE_KIND, verdict))
        kept = next(((c, r) for c, r in variants if c.id == payload.get("kept")), None)
        improved = False
        if kept is not None:
            self.optimizer.record(f"{task.id}@{state.lineage}", *kept)
            improved = bool(self.policy.after_round(state, RoundPlan(TUNE_KIND), [kept]))
        before, after = measured_speedup(result), measured_speedup(kept[1]) if kept else None
        if variants:
            changes = knob_lines(payload.get("changes", {}).get(kept[0].id, "")) if kept else []
            state.tunings.append(TuningReport(candidate.id, len(variants), sum(r.correct for _, r in variants),
                                              prompt_knobs(changes, PROMPT_KNOBS), before, after))
        self.tally.add(payload, variants, kept is not None)
        self.progress.line(f"[{task.id}] L{state.lineage} I{iteration} {'tuning':<8} -> {candidate.id}: "
                           + describe_tuning(payload, variants, before, after))
        return improved

    # -- profiling -----------------------------------------------------------------

    def profile_round(self, state: LineageState, iteration: int, candidates: list[Candidate],
                      results: dict[str, EvalResult]) -> None:
        """Profile the round's correct candidates and the variant its tuning kept (all, or
        only the one that became the lineage's best: ``[profiler] when``)."""
        if not self.profiling_on:
            return
        chosen = [(c, results[c.id]) for c in candidates if c.code and results[c.id].call_ok and results[c.id].correct]
        best, best_result = state.best, state.best_result
        if best is not None and best_result is not None and best.iteration == iteration and best.id not in results:
            chosen.append((best, best_result))  # a tuned variant of this round is the lineage's best now
        if self.recipe.profiler.when == "best":
            chosen = [(c, r) for c, r in chosen if best is not None and c.id == best.id]
        for candidate, result in chosen:
            self.profile(state, iteration, candidate, result)

    def profile(self, state: LineageState, iteration: int, candidate: Candidate, result: EvalResult) -> None:
        """Profile one correct candidate, or replay its recorded profile; stop its lineage at
        the roofline."""
        task = state.task
        payload = self.recorded_profiles.get((task.id, state.lineage, iteration, candidate.id))
        if payload is not None:
            record = ProfileRecord.from_dict(payload)
        else:
            record = self._run_profiler(task, candidate, result)
            self.store.event("profiled", record.to_dict(), task_id=task.id, lineage=state.lineage,
                             iteration=iteration)
        if record.ok:
            state.profiles.append(record)
        if self.recipe.profiler.in_prompts:  # the optimizer's history is a prompt too
            self.optimizer.record_profile(f"{task.id}@{state.lineage}", record)
        self.profile_tally.add(record)
        assert self.progress is not None
        where = f"[{task.id}] L{state.lineage} I{iteration}"
        self.progress.line(f"{where} {'profile':<8} -> {candidate.id}: {describe_profile(record)}")
        reason = roofline_stop(record, self.recipe.profiler.stop_at_peak_fraction)
        if reason is None or state.stop_reason is not None:
            return
        state.stop_reason = reason
        if (task.id, state.lineage) not in self.recorded_stops:
            self.store.event("lineage_stopped", {"reason": reason, "candidate": candidate.id}, task_id=task.id,
                             lineage=state.lineage, iteration=iteration)
        self.profile_tally.stop(task.id, state.lineage, reason)
        self.progress.line(f"{where} stopped: {reason}")

    def _run_profiler(self, task: Task, candidate: Candidate, result: EvalResult) -> ProfileRecord:
        """The profile of ``candidate`` (the judge's, within ``[profiler] seconds``), or a
        record saying why there is none."""
        name = self.recipe.components["profiler"].name
        reason = unprofiled_reason(result)
        if reason is not None:
            return ProfileRecord(name, candidate.id, error=reason)
        with self.eval_slots:  # a profile runs on the judge's device, never beside a timing
            record = profile_candidate(self.evaluator, task, candidate, result, self.profiler,
                                       self.recipe.profiler.seconds, self.hardware)
        if self.interrupted.is_set():
            raise RunStopped()  # profiled while stopping (its child killed): a resume profiles it again
        return dataclasses.replace(record, profiler=record.profiler or name)

    # -- lineages and tasks -----------------------------------------------------

    def run_lineage(self, task: Task, lineage: int) -> LineageState:
        state = LineageState(task, lineage)
        agent = self.recipe.agent
        done = self.task_done[task.id]
        for iteration in range(agent.iterations):
            if self.stop_event.is_set() or done.is_set():
                break
            if state.best_correct and self.optimizer.proposals == 0:
                break
            self._round(state, iteration)
            if state.stop_reason is not None:
                break
            if agent.target_speedup and state.best_speedup and state.best_speedup >= agent.target_speedup:
                done.set()
                break
            if agent.patience and state.rounds_without_gain >= agent.patience:
                break
        return state

    def stop(self, reason: str, fatal: bool) -> None:
        if not self.stop_event.is_set():
            self.stop_reason = ("failed: " if fatal else "budget_exhausted: ") + reason
            self.stop_event.set()

    def skip_reason(self, task: Task) -> str | None:
        """Why the judge cannot run ``task`` here (asked before any LLM call), or None."""
        reasons = self.evaluator.unmet_requirements(task)
        return "; ".join(reasons) if reasons else None

    def run(self, progress: Progress) -> RunSummary:
        from geak_core.kit.sandbox import accept_new_jobs

        accept_new_jobs()  # a run after a Ctrl-C that was caught in this process: children start
        self.progress = progress
        tasks = self.tasks()
        lineages = self.recipe.agent.lineages
        states: dict[str, list[LineageState]] = {t.id: [] for t in tasks}
        skipped: dict[str, str] = {}
        jobs = []
        for task in tasks:
            self.task_done[task.id] = threading.Event()
            self.ledgers[task.id] = TuneLedger(self.recipe.tuner.candidates, self.recipe.tuner.seconds)
            reason = self.skip_reason(task)
            if reason:
                skipped[task.id] = reason
                self.store.event("skipped", {"reason": reason}, task_id=task.id)
                progress.line(f"[{task.id}] skipped: {reason}")
                continue
            jobs.extend((task, lineage) for lineage in range(lineages))
        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=self.recipe.agent.concurrency) as pool:
            futures = {pool.submit(self.run_lineage, task, lineage): (task, lineage) for task, lineage in jobs}
            remaining = {t.id: lineages for t in tasks if t.id not in skipped}
            try:
                self._collect(futures, states, remaining, lineages, errors)
            except KeyboardInterrupt:
                self.interrupt()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        if errors:
            self.store.event("error", {"traceback": "".join(traceback.format_exception(errors[0]))})
        return self.summarize(tasks, states, skipped, lineages)

    def interrupt(self) -> None:
        """Ctrl-C: no lineage starts another round, nothing judged from now on is recorded (a
        resume judges it again), and the judge's running children are killed so that the
        rounds in flight end at once."""
        from geak_core.kit.sandbox import stop_running_jobs

        self.interrupted.set()
        self.stop_event.set()
        stop_running_jobs(refuse_new=True)

    def _collect(self, futures: dict[Any, tuple[Task, int]], states: dict[str, list[LineageState]],
                 remaining: dict[str, int], lineages: int, errors: list[BaseException]) -> None:
        for future in as_completed(futures):
            task, _ = futures[future]
            try:
                states[task.id].append(future.result())
            except RunStopped:
                pass
            except BaseException as exc:  # a bug: keep the others, report it
                errors.append(exc)
                self.stop(f"{type(exc).__name__}: {exc}", fatal=True)
            remaining[task.id] -= 1
            if remaining[task.id] == 0:
                self.finish_task(task, states[task.id], lineages)

    @staticmethod
    def _ordered(states: list[LineageState]) -> list[LineageState]:
        """Lineage order (not the order lineages happened to finish in), so ties between
        equal candidates always go the same way."""
        return sorted(states, key=lambda s: s.lineage)

    def _task_summary(self, task: Task, states: list[LineageState], lineages: int) -> TaskSummary:
        ordered = self._ordered(states)
        codes = {c.id: c.code for c in self.store.candidates(task.id)}
        summary = summarize_task(task, lineages, [r for s in ordered for r in s.results], codes=codes)
        summary.best_speedups = best_speedups(j for s in ordered for j in s.judged)
        return summary

    def finish_task(self, task: Task, states: list[LineageState], lineages: int) -> None:
        summary = self._task_summary(task, states, lineages)
        if summary.best_candidate_id:
            best = next((c for c in self.store.candidates(task.id) if c.id == summary.best_candidate_id), None)
            if best is not None:
                path = self.store.write_text(f"best/{task.id}.py", best.code)
                summary.best_file = str(path)
        self.store.write_json(
            f"tasks/{task.id}.json",
            {"summary": summary.to_dict(),
             "attempts": [a.to_dict() for s in self._ordered(states) for a in s.attempts],
             "stopped": {str(s.lineage): s.stop_reason for s in self._ordered(states) if s.stop_reason}},
        )
        assert self.progress is not None
        self.progress.task_finished(summary)
        self.plugins.notify("geak_task_finished", run_id=self.store.run_id, task=task, summary=summary)

    def summarize(
        self, tasks: list[Task], states: dict[str, list[LineageState]], skipped: dict[str, str], lineages: int
    ) -> RunSummary:
        summaries = []
        for task in tasks:
            if task.id in skipped:
                summaries.append(TaskSummary(task.id, task.difficulty, task.category, level=task.level,
                                             skipped_reason=skipped[task.id]))
                continue
            summary = self._task_summary(task, states[task.id], lineages)
            best_file = self.store.dir / "best" / f"{task.id}.py"
            summary.best_file = str(best_file) if best_file.exists() else None
            summaries.append(summary)
        if self.stop_reason is None:
            status, note = "finished", ""
        else:
            status, _, note = self.stop_reason.partition(": ")
        judged = [j for task in tasks if task.id not in skipped
                  for s in self._ordered(states[task.id]) for j in s.judged]
        curve = sequential_scaling(judged, {t.id: lineages for t in tasks if t.id not in skipped},
                                   self.recipe.agent.iterations)
        summary = summarize_run(self.store.run_id, status, summaries, lineages, self.store.usage(), note,
                                by_iteration=curve)
        summary.seed = self.recipe.run.seed
        summary.scripted = is_scripted(self.recipe.data.get("llm"))
        if self.tuning_on:
            summary.tuning = self.tally.summary(self.recipe.components["tuner"].name, self.recipe.tuner.when)
        if self.profiling_on:
            summary.profiling = self.profile_tally.summary(self.recipe.components["profiler"].name,
                                                           self.recipe.profiler.when)
        if self.generator.needs_tool_calling:
            summary.tools = self.tool_tally.summary(self.recipe.components["generator"].name)
        summary.speedup_method = run_speedup_method(
            (r for s in states.values() for st in s for _, _, r in st.results),
            self.recipe.data.get("evaluator", {}).get("speedup_method"))  # the judge's option, if it has one
        return summary


class StoredJudge(EvaluatorBase):
    """The run's judge as a tuner, and a conversing round's tools, see it: each variant (or
    draft) is stored as a candidate, its verdict served from the store when one is recorded
    for its code (a resumed run judges nothing twice) and recorded when new; at most the
    evaluator's ``max_parallel`` are judged at once, and verdicts come back in the order the
    jobs were given. What the tools ask of the judge besides (what a task needs, a profile)
    goes to the run's evaluator."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.max_parallel = max(1, int(agent.evaluator.max_parallel))

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        if self.agent.interrupted.is_set():
            raise RunStopped()  # Ctrl-C: no variant starts; a resume judges the rest
        self.agent.store.record_candidate(candidate)
        return self.agent.evaluate(task, candidate)

    def evaluate_many(self, jobs: Iterable[EvalJob]) -> Iterator[tuple[EvalJob, EvalResult]]:
        with ThreadPoolExecutor(max_workers=self.max_parallel) as pool:
            window: deque[tuple[EvalJob, Any]] = deque()
            for job in jobs:  # taken one at a time: the tuner may stop giving jobs (its deadline)
                window.append((job, pool.submit(self.evaluate, job.task, job.candidate)))
                if len(window) >= self.max_parallel:
                    done, future = window.popleft()
                    yield done, future.result()
            while window:
                done, future = window.popleft()
                yield done, future.result()

    def unmet_requirements(self, task: Task) -> list[str]:
        return self.agent.evaluator.unmet_requirements(task)

    def profile(self, task: Task, candidate: Candidate, profiler: Any, seconds: float, *,
                case: str = "", calls: int = 1) -> ProfileRecord:
        """The run's judge's profile, never beside a timing (one of the judge's slots held)."""
        if self.agent.interrupted.is_set():
            raise RunStopped()
        with self.agent.eval_slots:
            return self.agent.evaluator.profile(task, candidate, profiler, seconds, case=case, calls=calls)

    def close(self) -> None:
        return None


class TuningTally:
    """What the run's tunings did, for its summary (``RunSummary.tuning``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tuned = self.skipped = self.variants = self.correct = self.kept = 0
        self.notes: Counter[str] = Counter()

    def add(self, payload: dict[str, Any], variants: list[tuple[Candidate, EvalResult]], kept: bool) -> None:
        with self.lock:
            if payload.get("skipped"):
                self.skipped += 1
                self.notes[payload["skipped"]] += 1
                return
            self.tuned += 1
            self.variants += len(variants)
            self.correct += sum(r.correct for _, r in variants)
            self.kept += int(kept)
            self.notes.update(payload.get("notes", []))

    def summary(self, tuner: str, when: str) -> dict[str, Any]:
        with self.lock:
            return {"tuner": tuner, "when": when, "tuned": self.tuned, "skipped": self.skipped,
                    "variants_judged": self.variants, "variants_correct": self.correct, "kept": self.kept,
                    "notes": dict(sorted(self.notes.items()))}


def describe_tuning(payload: dict[str, Any], variants: list[tuple[Candidate, EvalResult]],
                    before: float | None, after: float | None) -> str:
    """One line: why a candidate was not tuned, or what its tuning judged and kept."""
    if payload.get("skipped"):
        return str(payload["skipped"])
    notes = "; ".join(payload.get("notes", []))
    if not variants:
        return "nothing judged" + (f": {notes}" if notes else "")
    correct = sum(r.correct for _, r in variants)
    text = f"{len(variants)} variants judged ({correct} correct), "
    kept = payload.get("kept")
    if kept and before is not None and after is not None:
        text += f"kept {payload['changes'][kept]}: {before:.2f}x -> {after:.2f}x"
    elif kept and after is not None:
        text += f"kept {payload['changes'][kept]}: {after:.2f}x"
    else:
        text += "none faster" + (f" than {before:.2f}x" if before is not None else "")
    return text + (f" ({notes})" if notes else "")


class ProfileTally:
    """What the run's profiles found, for its summary (``RunSummary.profiling``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.profiled = self.unprofiled = 0
        self.bounds: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.stopped: list[dict[str, Any]] = []

    def add(self, record: ProfileRecord) -> None:
        with self.lock:
            if not record.ok:
                self.unprofiled += 1
                self.notes[record.error or "the profiler saw no kernel"] += 1
                return
            self.profiled += 1
            self.bounds[record.diagnosis.bound if record.diagnosis else "unread"] += 1

    def stop(self, task_id: str, lineage: int, reason: str) -> None:
        with self.lock:
            self.stopped.append({"task": task_id, "lineage": lineage, "reason": reason})

    def summary(self, profiler: str, when: str) -> dict[str, Any]:
        with self.lock:
            return {"profiler": profiler, "when": when, "profiled": self.profiled, "unprofiled": self.unprofiled,
                    "bounds": dict(sorted(self.bounds.items())),
                    "stopped": sorted(self.stopped, key=lambda s: (s["task"], s["lineage"])),
                    "notes": dict(sorted(self.notes.items()))}


def describe_profile(record: ProfileRecord) -> str:
    """One line: why a candidate has no profile, or its bottleneck and longest kernel."""
    if not record.ok:
        return record.error or "the profiler saw no kernel"
    head = bound_line(record.diagnosis) if record.diagnosis else "no bottleneck could be read from the counters"
    counters = counters_text(record, limit=1)
    return f"{head} on {record.case or 'its case'}" + (f"; {counters[0]}" if counters else "")


def resolve_hardware(profile: str, plugins: PluginManager) -> HardwareProfile | None:
    """The named profile, or for "auto" the one matching the visible GPU (None on CPU): the
    judge's own matcher (``geak_core.engine.hardware``)."""
    return resolve_profile(profile, plugins, visible_device() if profile in ("", "auto") else None)


def preflight(recipe: Recipe, plugins: PluginManager) -> list[Task]:
    """What can be checked of a recipe without building more than its suite, beyond its keys
    and types: the suite builds and knows every task the recipe names (a dry run). The
    suite's selected tasks, or a ``RecipeError`` locating every problem."""
    return _suite_and_tasks(recipe, plugins)[1]


def _suite_and_tasks(recipe: Recipe, plugins: PluginManager) -> tuple[Any, list[Task]]:
    """The recipe's suite, built, and its selected tasks (``[suite] tasks``, ``categories``,
    ``limit``), or a ``RecipeError`` locating every problem."""
    comp = recipe.components["suite"]
    try:
        suite = plugins.build("suite", comp.name, comp.options)
        known = {task.id: task for task in suite.tasks()}
    except GeakError as exc:
        raise RecipeError([recipe.problem("suite", f"the suite {comp.name!r} cannot be loaded: {exc}")]) from exc
    problems = []
    for task_id in recipe.suite.tasks:
        if task_id not in known:
            close = difflib.get_close_matches(task_id, list(known), n=1, cutoff=0.6)
            problems.append(recipe.problem(
                "suite.tasks", f"unknown task {task_id!r} of suite {comp.name!r}",
                f"did you mean {close[0]!r}?" if close else f"see: geak-core tasks {comp.name}"))
    problems += category_problems(recipe, comp.name, list(known.values()))
    if recipe.suite.limit < 0:
        problems.append(recipe.problem("suite.limit", "must be >= 0 (0: every task)"))
    if problems:
        raise RecipeError(problems)
    chosen = [known[t] for t in recipe.suite.tasks] if recipe.suite.tasks else list(known.values())
    chosen = in_categories(chosen, recipe.suite.categories)
    return suite, (chosen[:recipe.suite.limit] if recipe.suite.limit > 0 else chosen)


@dataclass
class Prepared:
    """What a run builds before its first LLM call: one component per kind whose recipe
    section carries its options (the table in ``geak_core.api.components``; the evaluator
    built by the executor, where judgements run), the selected tasks, the hardware
    profile, the knowledge packs and the prompts. ``close`` lets the judge go."""

    components: dict[str, Any]
    tasks: list[Task]
    hardware: HardwareProfile | None
    packs: list[Any]
    prompts: PromptRenderer

    def close(self) -> None:
        evaluator = self.components.get("evaluator")
        if evaluator is not None:
            evaluator.close()


@contextmanager
def _located(recipe: Recipe, key: str) -> Iterator[None]:
    """Turns a ``GeakError`` raised while building what ``key`` names into a ``RecipeError``
    at the recipe's file and line for ``key`` (an ``OptionError`` at its option's key)."""
    try:
        yield
    except RecipeError:
        raise
    except OptionError as exc:
        raise RecipeError([recipe.problem(f"{key}.{exc.key}", exc.message, exc.hint)]) from exc
    except GeakError as exc:
        raise RecipeError([recipe.problem(key, str(exc))]) from exc


def prepare(recipe: Recipe, plugins: PluginManager, *, llm: bool = True) -> Prepared:
    """Build everything a run builds before its first LLM call, in the order a run does, so
    that whatever of it can fail on this machine (a suite without its data, an executor
    whose cluster does not answer, a profile or template that does not build) fails here,
    as a ``RecipeError`` at the key it comes from. ``run`` does this before it creates a
    run folder, ``recipe check`` (``check_run``) too; ``llm=False`` leaves the LLM backend
    out (``recipe check --no-env``: its key need not be set)."""
    suite, tasks = _suite_and_tasks(recipe, plugins)
    built: dict[str, Any] = {"suite": suite}
    for kind in COMPONENT_KINDS:
        if not kind.options or kind.section in ("suite", "evaluator") or (kind.section == "llm" and not llm):
            continue
        comp = recipe.components[kind.section]
        with _located(recipe, kind.section):
            built[kind.section] = plugins.build(kind.name, comp.name, comp.options)
    with _located(recipe, "hardware.profile"):
        hardware = resolve_hardware(recipe.hardware.profile, plugins)
    problem = _profiler_problem(recipe, built["profiler"], hardware) or _tool_calling_problem(recipe, built)
    if problem is not None:  # before the executor starts a judge
        raise RecipeError([problem])
    with _located(recipe, "knowledge.packs"):
        packs = [plugins.build("knowledge_pack", name) for name in recipe.knowledge.packs]
    with _located(recipe, "prompts"):
        prompts = PromptRenderer.from_recipe(recipe, plugins)
    judge = recipe.components["evaluator"]
    with _located(recipe, "executor"):  # last: it may connect to a cluster or start judges
        built["evaluator"] = as_component("evaluator", built["executor"].evaluator(
            plugins.spec("evaluator", judge.name), judge.options))
    built["evaluator"].set_hardware(hardware)
    built["tuner"].set_hardware(hardware)
    built["profiler"].set_hardware(hardware)
    return Prepared(built, tasks, hardware, packs, prompts)


def _profiler_problem(recipe: Recipe, profiler: Any, hardware: HardwareProfile | None) -> RecipeProblem | None:
    """Why the recipe's profiler cannot run on this machine (its ``unusable()``, or a GPU of
    a vendor it does not support), at ``[profiler] name``; None: it can."""
    name = recipe.components["profiler"].name
    reasons = list(profiler.unusable())
    if hardware is not None and hardware.vendor not in profiler.vendors:
        reasons.append(f"it runs on {' and '.join(profiler.vendors)} GPUs, this is {hardware.marketing_name}")
    if not reasons:
        return None
    return recipe.problem("profiler.name", f'profiler "{name}" cannot run here: ' + "; ".join(reasons),
                          'name = "none" runs without profiling')


def _tool_calling_problem(recipe: Recipe, built: dict[str, Any]) -> RecipeProblem | None:
    """Why the recipe's LLM backend cannot serve its generator, which offers the model tools,
    at ``[llm] backend``; None: it can, or the generator offers none, or the backend was left
    unbuilt (``recipe check --no-env``)."""
    if "llm" not in built or not built["generator"].needs_tool_calling or built["llm"].tool_calling:
        return None
    backend, generator = recipe.components["llm"].name, recipe.components["generator"].name
    return recipe.problem("llm.backend", f'backend "{backend}" cannot call tools, which generator '
                          f'"{generator}" gives the model',
                          "choose a backend that can (openai, anthropic, gemini, replay), or another generator")


def check_run(recipe: Recipe, plugins: PluginManager, *, llm: bool = True) -> list[Task]:
    """``recipe check``: what ``run`` builds before its first LLM call (``prepare``), built
    and let go again; the selected tasks, or a ``RecipeError`` locating every problem."""
    prepared = prepare(recipe, plugins, llm=llm)
    prepared.close()
    return prepared.tasks


# What a resume may change freely: where the run lives, its budget, how the LLM endpoint is
# reached (not what is asked of it) and where judgements run; the rest changes the run itself.
RESUME_MAY_CHANGE = ("run.output_dir", "run.max_llm_calls", "run.max_tokens", "run.max_cost_usd",
                     "run.max_tool_calls", "run.max_tool_seconds",
                     "llm.base_url", "llm.api_key_env", "llm.timeout_connect_s", "llm.timeout_read_s",
                     "llm.max_retries", "llm.max_concurrency", "executor.")


# Keys added to recipes after runs were first stored, with their defaults: a run recorded
# without one resumes under the default as unchanged.
ADDED_WITH_DEFAULTS = {"tuner.name": "none",
                       **{f"tuner.{key}": value for key, value in options_to_dict(TunerSection()).items()},
                       "profiler.name": "none",
                       **{f"profiler.{key}": value for key, value in options_to_dict(ProfilerSection()).items()}}


def recipe_changes(store: RunStore, recipe: Recipe) -> list[str]:
    """What ``recipe`` changes of the recipe ``store``'s run was started (or last resumed)
    with, one ``key: old -> new`` line each, but for ``RESUME_MAY_CHANGE``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    try:
        recorded = tomllib.loads((store.dir / RECIPE_FILE).read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return []  # a run folder without its recipe: nothing to compare with
    now = tomllib.loads(dump_toml(recipe.data))  # the same round trip as the stored one
    before, after = dotted(recorded), dotted(now)
    return [f"{key}: {before.get(key, '(unset)')!r} -> {after.get(key, '(unset)')!r}"
            for key in sorted(set(before) | set(after))
            if not _may_change(key) and before.get(key) != after.get(key)
            and not (key not in before and key in ADDED_WITH_DEFAULTS
                     and after.get(key) == ADDED_WITH_DEFAULTS[key])]


def _may_change(key: str) -> bool:
    return any(key == free or (free.endswith(".") and key.startswith(free)) for free in RESUME_MAY_CHANGE)


def _finished_summary(store: RunStore) -> RunSummary | None:
    """The stored summary of a run that finished (``RunStore.finished``), or None for one
    there is something left to do in (or whose summary cannot be read: resuming writes it)."""
    import json

    if not store.finished():
        return None
    try:
        return RunSummary.from_dict(json.loads((store.dir / SUMMARY_FILE).read_text()))
    except (OSError, ValueError):
        return None


def run_recipe(
    recipe: Recipe,
    plugins: PluginManager,
    *,
    resume: str | None = None,
    dry_run: bool = False,
    allow_changes: bool = False,
    echo: Echo = print,
    run_name: str | None = None,
    print_summary: bool = True,
) -> RunSummary | None:
    """Run (or resume) a recipe; returns the summary, or None for a dry run. Resuming with a
    recipe that changes more than ``RESUME_MAY_CHANGE`` is refused unless
    ``allow_changes`` (the stored recipe is then replaced and the change kept in the run's
    ``recipe_history``). ``run_name`` names a new run (its id, ``runs list``) in place of
    ``[run] name`` (``ablation``: each variant by its recipe file); without
    ``print_summary`` the run ends with one line of its figures, not its tables (``ablation``
    prints one table of all its runs)."""
    comp = recipe.components
    if dry_run:
        tasks = preflight(recipe, plugins)
        echo(f"recipe {recipe.path} is valid")
        for section, c in comp.items():
            echo(f"  {section}: {c.name}")
        echo(f"  tasks: {len(tasks)} x {recipe.agent.lineages} lineages x up to {recipe.agent.iterations} rounds")
        for t in tasks:
            echo(f"    {t.key}")
        echo("dry run: nothing was generated or judged")
        return None
    if resume:
        run_dir = resolve_run(resume, recipe.run.output_dir)
        lock = RunLock(run_dir).acquire()  # before anything is read: one process resumes it
        try:
            reopened = _reopen(run_dir, recipe, plugins, allow_changes, echo)
        except BaseException:
            lock.release()
            raise
        if isinstance(reopened, RunSummary):  # finished already: nothing to resume
            lock.release()
            return reopened
        store, prepared = reopened
    else:
        # before a run folder exists: a recipe that cannot run here leaves none
        prepared = prepare(recipe, plugins)
        versions = {p.name: p.version for p in plugins.plugins.values() if p.version}
        try:
            store = RunStore.create(recipe.run.output_dir, run_name or recipe.run.name, dump_toml(recipe.data),
                                    environment_manifest(versions))
            lock = RunLock(store.dir).acquire()  # a resume started meanwhile waits for this run
        except BaseException:
            prepared.close()
            raise
        echo(f"run {store.run_id} ({store.dir}), seed {recipe.run.seed}")
    try:
        return _run_locked(recipe, plugins, store, echo, prepared, print_summary)
    finally:
        store.close()  # however the run ends: the process may leave without finalizers (cli_exit)
        lock.release()


def _reopen(run_dir: Path, recipe: Recipe, plugins: PluginManager, allow_changes: bool,
            echo: Echo) -> RunSummary | tuple[RunStore, Prepared]:
    """The stored run to resume, checked against ``recipe``, and what the run needs built
    (see ``run_recipe``); a finished run's summary when there is nothing left to do."""
    store = RunStore(run_dir)
    recorded_seed = store.meta("seed")
    if recorded_seed is not None and recorded_seed != recipe.run.seed:
        store.close()
        raise InputError(
            f"run {store.run_id} was started with [run] seed = {recorded_seed}; resuming it with "
            f"seed = {recipe.run.seed} would ask its remaining questions with other seeds "
            f"(set seed = {recorded_seed} in {recipe.path})"
        )
    changes = recipe_changes(store, recipe)
    if changes and not allow_changes:
        store.close()
        raise InputError(
            f"run {store.run_id} was started with another recipe; resuming with {recipe.path} would "
            "change:\n  " + "\n  ".join(changes)
            + "\n(put the recipe back, or pass --allow-changes to continue the run with these changes)")
    finished = _finished_summary(store)
    if finished is not None:  # nothing left to do: the run and its events stay as they are
        store.close()
        echo(f"run {store.run_id} is already finished; nothing to resume ({run_dir})")
        echo("")
        echo(format_summary(finished))
        return finished
    try:
        prepared = prepare(recipe, plugins)  # before the run is touched: one that cannot run stays as it was
    except BaseException:
        store.close()
        raise
    if changes:
        history = list(store.meta("recipe_history", []))
        history.append({"at": time.time(), "recipe": str(recipe.path), "changes": changes})
        store.set_meta("recipe_history", history)
        store.write_text(RECIPE_FILE, dump_toml(recipe.data))
        echo("continuing with recipe changes: " + "; ".join(changes))
    echo(f"resuming run {store.run_id} ({run_dir})")
    return store, prepared


def _run_locked(recipe: Recipe, plugins: PluginManager, store: RunStore, echo: Echo,
                prepared: Prepared, print_summary: bool = True) -> RunSummary:
    """The run itself, its lock held (``run_recipe``)."""
    store.set_meta("seed", recipe.run.seed)
    store.set_meta("status", "running")
    store.set_meta("owner", owner_record())  # a run whose owner is gone shows as interrupted
    store.set_meta("failure", None)
    resume_hint = f"geak-core run {recipe.path} --resume {store.dir.resolve()}"  # whatever --output-dir
    progress: Progress | None = None
    heartbeat = Heartbeat(store).start()  # for readers on other hosts (run_status)
    try:
        agent = Agent(recipe, plugins, store, echo, prepared)
        plugins.notify("geak_run_started", run_id=store.run_id, run_dir=str(store.dir), recipe=recipe.data)
        progress = Progress(echo, len(agent.tasks()), lineages=recipe.agent.lineages,
                            iterations=recipe.agent.iterations, usage=store.usage)
        summary = agent.run(progress)
    except KeyboardInterrupt:
        store.set_meta("status", "interrupted")
        if progress is not None:
            progress.close()  # the hint on a line of its own, not after the progress line
            progress = None
        echo(f"interrupted; resume with: {resume_hint}")
        raise
    except Exception as exc:  # a bad input (GeakError) or the project's own fault: said why
        store.set_meta("status", "failed")
        store.set_meta("failure", f"{type(exc).__name__}: {exc}" if not isinstance(exc, GeakError) else str(exc))
        raise
    finally:
        heartbeat.stop()
        if progress is not None:
            progress.close()
        prepared.close()
    store.set_meta("status", summary.status)
    store.write_json(SUMMARY_FILE, summary.to_dict())
    store.event("run_finished", {"status": summary.status, "note": summary.note})
    plugins.notify("geak_run_finished", run_id=store.run_id, run_dir=str(store.dir), summary=summary)
    if print_summary:
        echo("")
        echo(format_summary(summary))
        echo(f"\nrun stored in {store.dir}")
    else:
        echo(f"run {store.run_id} {summary.status}: {format_outcome(summary)}")
    if summary.status == "budget_exhausted":
        echo(f"budget exhausted; raise it in the recipe and resume with: {resume_hint}")
    return summary


__all__ = ["Agent", "request_seed", "resolve_hardware", "run_recipe"]
