"""The GEAK agent loop: generate, judge, reflect, escape debugging traps, optimise, scale.

For each task, ``lineages`` independent lineages (parallel scaling) run for up
to ``iterations`` rounds (sequential scaling). Each round asks the LLM for one
candidate (``proposals`` of them for an optimisation step, all judged) with one
of three prompts:

* ``generate``: the task, a retrieved example and the knowledge packs (also
  after a restart, with the abandoned strategies listed);
* ``reflect``: the last candidate and a trimmed report of why it failed;
* ``optimize``: the optimizer's archive of correct candidates, ascending by
  speedup, asking for a better strategy.

A lineage that fails ``max_debug_attempts`` fixes in a row is caught in a
debugging trap: it drops its approach and starts from a fresh strategy.

Every LLM call and evaluation is stored under a *slot* (task, lineage,
iteration, purpose). Resuming a run replays the loop and serves recorded slots
from the store, so nothing already paid for or judged is repeated, and the
final summary equals that of an uninterrupted run.

Reproducibility: each request carries a seed derived from ``[run] seed`` and
its slot (``request_seed``), so lineages sample independently and a rerun asks
exactly the same questions; the agent itself draws nothing at random, and its
order-dependent choices (the best of equal candidates) follow lineage and
iteration order, never thread timing. The judge's secret seeds are the
evaluator's own and do not come from ``[run] seed``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from geak_core.components import (
    Example,
    HardwareProfile,
    KnowledgeContext,
    RetrievalQuery,
)
from geak_core.errors import GeakError, InputError
from geak_core.llm import ChatRequest, ChatResponse, FatalLLMError, LLMError, Message
from geak_core.model import Attempt, Candidate, EvalResult, RunSummary, TaskSummary
from geak_core.plugins import PluginManager
from geak_core.progress import CandidateJudged, Echo, Progress
from geak_core.prompts import PromptRenderer
from geak_core.recipe import Recipe, dump_toml
from geak_core.report import format_summary, summarize_run, summarize_task
from geak_core.store import SUMMARY_FILE, RunStore, environment_manifest, resolve_run
from geak_core.tasks import Task


class BudgetExhausted(GeakError):
    exit_code = 0


class RunStopped(Exception):
    """Raised inside lineages once the run must stop (budget, fatal error)."""


# ---------------------------------------------------------------------------
# LLM calls: recorded, resumable, budgeted
# ---------------------------------------------------------------------------


def slot_key(**slot: Any) -> str:
    blob = json.dumps(slot, sort_keys=True)
    return "slot:" + hashlib.sha256(blob.encode()).hexdigest()[:32]


SEED_RANGE = 2**31 - 2**16  # room for ``seed + i`` of split samples within a signed 32-bit int


def request_seed(run_seed: int, task_key: str, lineage: int, iteration: int) -> int:
    """The LLM request seed of one slot: fixed by ``[run] seed``, different for every slot."""
    blob = json.dumps([run_seed, task_key, lineage, iteration])
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big") % SEED_RANGE


@dataclass
class Budget:
    max_calls: int = 0
    max_tokens: int = 0
    max_cost_usd: float = 0.0
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> None:
        with self.lock:
            if self.max_calls and self.calls >= self.max_calls:
                raise BudgetExhausted(f"LLM call budget of {self.max_calls} reached")
            if self.max_tokens and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"token budget of {self.max_tokens} reached")
            if self.max_cost_usd and self.cost_usd >= self.max_cost_usd:
                raise BudgetExhausted(f"cost budget of ${self.max_cost_usd} reached")

    def add(self, response: ChatResponse) -> None:
        with self.lock:
            self.calls += 1
            self.tokens += response.usage.total_tokens
            self.cost_usd += response.cost_usd or 0.0


class RecordedLLM:
    """Wraps a backend: serves recorded slots, records live calls, enforces the budget."""

    def __init__(self, backend: Any, backend_name: str, store: RunStore, budget: Budget):
        self.backend = backend
        self.name = backend_name
        self.store = store
        self.budget = budget
        self.identity = backend.identity()
        self._semaphore = threading.BoundedSemaphore(max(1, int(getattr(backend, "max_concurrency", 4))))

    def complete(self, request: ChatRequest, slot: dict[str, Any]) -> tuple[str, ChatResponse]:
        call_key = slot_key(**slot)
        recorded = self.store.find_llm_call(call_key)
        if recorded is not None:
            return recorded["id"], ChatResponse.from_dict(recorded["response"])
        self.budget.check()
        call_id = uuid.uuid4().hex
        request.meta = {**request.meta, **slot}
        started = time.monotonic()
        with self._semaphore:
            try:
                response = self.backend.complete(request)
            except LLMError as exc:
                self.store.record_llm_call(
                    call_id=call_id, key=request.key(self.identity), call_key=call_key,
                    backend=self.name, identity=self.identity, request=request.to_dict(),
                    response=None, error=f"{type(exc).__name__}: {exc}",
                    latency_s=time.monotonic() - started, meta=slot,
                )
                raise
        self.budget.add(response)
        self.store.record_llm_call(
            call_id=call_id, key=request.key(self.identity), call_key=call_key, backend=self.name,
            identity=self.identity, request=request.to_dict(), response=response.to_dict(),
            error=None, latency_s=response.latency_s or (time.monotonic() - started),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens, cost_usd=response.cost_usd, meta=slot,
        )
        return call_id, response


# ---------------------------------------------------------------------------
# Code extraction (the reply format is GEAK's: strategy + code)
# ---------------------------------------------------------------------------


def extract_candidate_code(reply: str, required_names: list[str]) -> tuple[str | None, str]:
    """(code or None, strategy text) from one model reply."""
    from geak_core.extract import extract_code

    found = extract_code(reply, required_names=required_names)
    if found is None:
        return None, ""
    return found.code, (found.strategy or "")


def error_report(result: EvalResult, limit: int = 2500) -> str:
    """What the reflector is shown: the failing stage, the reason, the trimmed error, mismatches."""
    parts = [f"failed stage: {result.failed_stage or 'unknown'}"]
    if result.reason:
        parts.append(f"reason: {result.reason}")
    for m in result.mismatches[:3]:
        parts.append("mismatch: " + json.dumps(m, default=str)[:600])
    if result.error:
        tail = result.error[-limit:]
        parts.append("error output (tail):\n" + tail)
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------


@dataclass
class LineageState:
    task: Task
    lineage: int
    last: Candidate | None = None
    last_result: EvalResult | None = None
    failed_fixes: int = 0
    abandoned: list[str] = field(default_factory=list)
    best_speedup: float | None = None
    best_correct: bool = False
    rounds_without_gain: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    results: list[tuple[int, str, EvalResult]] = field(default_factory=list)


class Agent:
    def __init__(self, recipe: Recipe, plugins: PluginManager, store: RunStore, echo: Echo):
        self.recipe = recipe
        self.plugins = plugins
        self.store = store
        self.echo = echo
        comp = recipe.components
        self.suite = plugins.build("suite", comp["suite"].name, comp["suite"].options)
        backend = plugins.build("llm_backend", comp["llm"].name, comp["llm"].options)
        self.budget = Budget(recipe.run.max_llm_calls, recipe.run.max_tokens, recipe.run.max_cost_usd)
        usage = store.usage()
        self.budget.calls, self.budget.tokens = usage["calls"], usage["prompt_tokens"] + usage["completion_tokens"]
        self.budget.cost_usd = usage["cost_usd"] or 0.0
        self.llm = RecordedLLM(backend, comp["llm"].name, store, self.budget)
        self.retriever = plugins.build("retriever", comp["retriever"].name, comp["retriever"].options)
        self.optimizer = plugins.build("optimizer", comp["optimizer"].name, comp["optimizer"].options)
        self.evaluator = plugins.build("evaluator", comp["evaluator"].name, comp["evaluator"].options)
        self.hardware = resolve_hardware(recipe.hardware.profile, plugins)
        if hasattr(self.evaluator, "set_hardware"):
            self.evaluator.set_hardware(self.hardware)
        self.packs = [plugins.build("knowledge_pack", name) for name in recipe.knowledge.packs]
        self.prompts = PromptRenderer.from_recipe(recipe, plugins)
        self.eval_slots = threading.BoundedSemaphore(max(1, int(getattr(self.evaluator, "max_parallel", 1))))
        self.stop_reason: str | None = None
        self.stop_event = threading.Event()
        self.task_done: dict[str, threading.Event] = {}

    # -- helpers -------------------------------------------------------------

    def tasks(self) -> list[Task]:
        wanted = self.recipe.suite.tasks
        if not wanted:
            return self.suite.tasks()
        return [self.suite.get(task_id) for task_id in wanted]

    def knowledge(self, task: Task) -> list[dict[str, str]]:
        context = KnowledgeContext(task=task, hardware=self.hardware)
        return [{"title": p.title, "text": p.render(context)} for p in self.packs]

    def retrieve(self, state: LineageState) -> list[Example]:
        """The retriever's examples for this lineage (as many as it is configured to give)."""
        code = state.last.code if (state.last and self.recipe.agent.retrieve_with_code) else None
        examples = self.retriever.retrieve(RetrievalQuery(task=state.task, code=code, k=1))
        self.store.event(
            "retrieved",
            {"examples": [{"id": e.id, "score": e.score, "source": e.source} for e in examples],
             "query": "code" if code else "instruction"},
            task_id=state.task.id, lineage=state.lineage,
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
        self.store.record_evaluation(candidate, result)
        self.plugins.notify(
            "geak_candidate_evaluated", run_id=self.store.run_id, task=task, candidate=candidate, result=result
        )
        return result

    # -- one round -----------------------------------------------------------

    def _prompt(self, state: LineageState, iteration: int) -> tuple[str, list[Message]]:
        task = state.task
        view = task.prompt_view()
        hw = self.hardware.name if self.hardware else None
        system = self.prompts.render("system", task=view, hardware=hw)
        last, result = state.last, state.last_result
        trapped = False
        if last is not None and result is not None and not result.correct:
            if state.failed_fixes >= self.recipe.agent.max_debug_attempts:
                trapped = True
            else:
                user = self.prompts.render(
                    "reflect", task=view, code=last.code, report=error_report(result),
                    call_ok=result.call_ok, attempt=state.failed_fixes + 1,
                    max_attempts=self.recipe.agent.max_debug_attempts,
                    knowledge=self.knowledge(task), hardware=hw,
                )
                return "reflect", [Message("system", system), Message("user", user)]
        if last is not None and result is not None and result.correct and not trapped:
            context = self.optimizer.context(f"{task.id}@{state.lineage}")
            user = self.prompts.render(
                "optimize", task=view, knowledge=self.knowledge(task), hardware=hw, **context
            )
            return "optimize", [Message("system", system), Message("user", user)]
        if trapped:
            assert last is not None
            state.abandoned.append(last.strategy or "(unnamed approach)")
            state.failed_fixes = 0
            state.last, state.last_result = None, None
            state.attempts.append(Attempt(task.id, state.lineage, iteration, "restart", None,
                                          note="debugging trap: approach abandoned"))
            self.store.event("restart", {"abandoned": state.abandoned[-1]}, task_id=task.id,
                             lineage=state.lineage, iteration=iteration)
        examples = self.retrieve(state)
        user = self.prompts.render(
            "strategy" if trapped else "generate", task=view, examples=examples,
            example=examples[0] if examples else None,
            knowledge=self.knowledge(task), abandoned=state.abandoned, hardware=hw,
        )
        return ("restart" if trapped else "generate"), [Message("system", system), Message("user", user)]

    def _round(self, state: LineageState, iteration: int) -> None:
        task = state.task
        kind, messages = self._prompt(state, iteration)
        n = max(1, int(self.optimizer.proposals)) if kind == "optimize" else 1
        seed = request_seed(self.recipe.run.seed, task.key, state.lineage, iteration)
        request = ChatRequest(messages=messages, n=n, seed=seed, meta={"purpose": kind})
        slot = {"task": task.key, "lineage": state.lineage, "iteration": iteration, "purpose": kind}
        try:
            call_id, response = self.llm.complete(request, slot)
        except (FatalLLMError, BudgetExhausted) as exc:
            self.stop(str(exc), fatal=isinstance(exc, FatalLLMError))
            raise RunStopped() from exc
        except LLMError as exc:  # retries exhausted: count as a failed round, keep going
            state.attempts.append(Attempt(task.id, state.lineage, iteration, kind, None, note=f"llm error: {exc}"))
            self.store.event("llm_failed", {"error": str(exc)}, task_id=task.id, lineage=state.lineage,
                             iteration=iteration)
            return
        names = [e.name for e in task.entry_points]
        origin = "generate" if kind == "restart" else kind
        parent = state.last.id if state.last else None
        candidates: list[Candidate] = []
        results: dict[str, EvalResult] = {}
        for index, reply in enumerate(response.texts[:n] or [""]):
            candidate_id = f"{task.id}/L{state.lineage}/I{iteration}" + (f"/P{index}" if n > 1 else "")
            code, strategy = extract_candidate_code(reply, names)
            if code is None:
                candidate = Candidate(candidate_id, task.id, "", state.lineage, iteration, origin,
                                      strategy, None, call_id)
                results[candidate_id] = EvalResult(task_id=task.id, candidate_id=candidate_id,
                                                   failed_stage="extract",
                                                   reason="the reply contains no usable code")
                self.store.record_evaluation(candidate, results[candidate_id])
            else:
                candidate = Candidate(candidate_id, task.id, code, state.lineage, iteration, origin,
                                      strategy, parent, call_id)
                self.store.record_candidate(candidate)
            candidates.append(candidate)
        judged = [c for c in candidates if c.code]
        results.update(zip([c.id for c in judged], self.evaluate_all(task, judged), strict=True))
        improved = False
        for index, candidate in enumerate(candidates):  # proposal order: deterministic outcomes
            result = results[candidate.id]
            if candidate.code:
                self.optimizer.record(f"{task.id}@{state.lineage}", candidate, result)
            state.results.append((state.lineage, candidate.id, result))
            improved = self._update(state, candidate, result, kind) or improved
            state.attempts.append(Attempt(task.id, state.lineage, iteration, kind, candidate.id,
                                          result.call_ok, result.correct, result.speedup,
                                          note=result.reason or ""))
            self.progress.candidate_judged(CandidateJudged(
                task.id, state.lineage, iteration, kind, result, proposal=index if n > 1 else None))
        state.rounds_without_gain = 0 if improved else state.rounds_without_gain + 1

    def _update(self, state: LineageState, candidate: Candidate, result: EvalResult, kind: str) -> bool:
        """Advance the lineage after one round; True if it improved."""
        if result.correct:
            faster = result.speedup is not None and (
                state.best_speedup is None or result.speedup > state.best_speedup
            )
            gained = not state.best_correct or faster
            if gained:
                state.last, state.last_result = candidate, result
            state.best_correct = True
            if faster:
                state.best_speedup = result.speedup
            state.failed_fixes = 0
            return gained
        if kind == "optimize":
            return False  # a failed optimisation leaves the lineage on its best correct code
        state.failed_fixes = state.failed_fixes + 1 if kind == "reflect" else 0
        if candidate.code:
            state.last, state.last_result = candidate, result
        return False

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
        checker = getattr(self.evaluator, "unmet_requirements", None)
        if checker is None:
            return None
        reasons = checker(task)
        return "; ".join(reasons) if reasons else None

    def run(self, progress: Progress) -> RunSummary:
        self.progress = progress
        tasks = self.tasks()
        lineages = self.recipe.agent.lineages
        states: dict[str, list[LineageState]] = {t.id: [] for t in tasks}
        skipped: dict[str, str] = {}
        jobs = []
        for task in tasks:
            self.task_done[task.id] = threading.Event()
            reason = self.skip_reason(task)
            if reason:
                skipped[task.id] = reason
                continue
            jobs.extend((task, lineage) for lineage in range(lineages))
        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=self.recipe.agent.concurrency) as pool:
            futures = {pool.submit(self.run_lineage, task, lineage): (task, lineage) for task, lineage in jobs}
            remaining = {t.id: lineages for t in tasks if t.id not in skipped}
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
        if errors:
            import traceback

            self.store.event("error", {"traceback": "".join(traceback.format_exception(errors[0]))})
        return self.summarize(tasks, states, skipped, lineages)

    @staticmethod
    def _results(states: list[LineageState]) -> list[tuple[int, str, EvalResult]]:
        """Every judged candidate in lineage, then iteration order (not the order lineages
        happened to finish in), so ties between equal candidates always go the same way."""
        return [r for s in sorted(states, key=lambda s: s.lineage) for r in s.results]

    def finish_task(self, task: Task, states: list[LineageState], lineages: int) -> None:
        results = self._results(states)
        summary = summarize_task(task, lineages, results)
        if summary.best_candidate_id:
            best = next((c for c in self.store.candidates(task.id) if c.id == summary.best_candidate_id), None)
            if best is not None:
                path = self.store.write_text(f"best/{task.id}.py", best.code)
                summary.best_file = str(path)
        self.store.write_json(
            f"tasks/{task.id}.json",
            {"summary": summary.to_dict(),
             "attempts": [a.to_dict() for s in sorted(states, key=lambda s: s.lineage) for a in s.attempts]},
        )
        self.progress.task_finished(summary)
        self.plugins.notify("geak_task_finished", run_id=self.store.run_id, task=task, summary=summary)

    def summarize(
        self, tasks: list[Task], states: dict[str, list[LineageState]], skipped: dict[str, str], lineages: int
    ) -> RunSummary:
        summaries = []
        for task in tasks:
            if task.id in skipped:
                summaries.append(TaskSummary(task.id, task.difficulty, task.category, skipped_reason=skipped[task.id]))
                continue
            summary = summarize_task(task, lineages, self._results(states[task.id]))
            best_file = self.store.dir / "best" / f"{task.id}.py"
            summary.best_file = str(best_file) if best_file.exists() else None
            summaries.append(summary)
        if self.stop_reason is None:
            status, note = "finished", ""
        else:
            status, _, note = self.stop_reason.partition(": ")
        summary = summarize_run(self.store.run_id, status, summaries, lineages, self.store.usage(), note)
        summary.seed = self.recipe.run.seed
        methods = {r.speedup_method for s in states.values() for st in s for _, _, r in st.results
                   if r.speedup is not None and r.speedup_method}
        if len(methods) == 1:
            summary.speedup_method = methods.pop()
        return summary


def resolve_hardware(profile: str, plugins: PluginManager) -> HardwareProfile | None:
    """The named profile, or for "auto" the one matching the visible GPU (None on CPU)."""
    profiles = plugins.components("hardware_profile")
    if profile != "auto":
        return plugins.build("hardware_profile", profile)
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        device_name = torch.cuda.get_device_name(0)
        arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
    except Exception:
        return None
    for name in sorted(profiles):
        built = plugins.build("hardware_profile", name)
        if built.matches(device_name) or (arch and built.matches(arch)):
            return built
    return None


def run_recipe(
    recipe: Recipe,
    plugins: PluginManager,
    *,
    resume: str | None = None,
    dry_run: bool = False,
    echo: Echo = print,
) -> RunSummary | None:
    """Run (or resume) a recipe; returns the summary, or None for a dry run."""
    comp = recipe.components
    if dry_run:
        suite = plugins.build("suite", comp["suite"].name, comp["suite"].options)
        tasks = suite.tasks() if not recipe.suite.tasks else [suite.get(t) for t in recipe.suite.tasks]
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
        store = RunStore(run_dir)
        recorded_seed = store.meta("seed")
        if recorded_seed is not None and recorded_seed != recipe.run.seed:
            store.close()
            raise InputError(
                f"run {store.run_id} was started with [run] seed = {recorded_seed}; resuming it with "
                f"seed = {recipe.run.seed} would ask its remaining questions with other seeds "
                f"(set seed = {recorded_seed} in {recipe.path})"
            )
        echo(f"resuming run {store.run_id} ({run_dir})")
    else:
        versions = {p.name: p.version for p in plugins.plugins.values() if p.version}
        store = RunStore.create(recipe.run.output_dir, recipe.run.name, dump_toml(recipe.data),
                                environment_manifest(versions))
        echo(f"run {store.run_id} ({store.dir}), seed {recipe.run.seed}")
    store.set_meta("seed", recipe.run.seed)
    store.set_meta("status", "running")
    progress: Progress | None = None
    agent: Agent | None = None
    try:
        agent = Agent(recipe, plugins, store, echo)
        plugins.notify("geak_run_started", run_id=store.run_id, run_dir=str(store.dir), recipe=recipe.data)
        progress = Progress(echo, len(agent.tasks()))
        summary = agent.run(progress)
    except KeyboardInterrupt:
        store.set_meta("status", "interrupted")
        echo(f"interrupted; resume with: geak-core run {recipe.path} --resume {store.run_id}")
        raise
    except GeakError:
        store.set_meta("status", "failed")
        raise
    finally:
        if progress is not None:
            progress.close()
        if agent is not None:
            agent.evaluator.close()
    store.set_meta("status", summary.status)
    store.write_json(SUMMARY_FILE, summary.to_dict())
    store.event("run_finished", {"status": summary.status, "note": summary.note})
    plugins.notify("geak_run_finished", run_id=store.run_id, run_dir=str(store.dir), summary=summary)
    echo("")
    echo(format_summary(summary))
    echo(f"\nrun stored in {store.dir}")
    if summary.status == "budget_exhausted":
        echo(f"budget exhausted; raise it in the recipe and resume with: "
             f"geak-core run {recipe.path} --resume {store.run_id}")
    store.close()
    return summary


__all__ = ["Agent", "run_recipe", "resolve_hardware"]
