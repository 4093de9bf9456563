"""What each kind of component must provide (typed protocols) and how it is registered.

A plugin registers a component with a name, a factory and an options schema::

    @dataclass
    class MyBackendOptions:
        model: str
        temperature: float = 1.0

    @geak_core.hookimpl
    def geak_register_llm_backends(register):
        register("mine", MyBackend, options=MyBackendOptions, description="...")

The options dataclass is the schema the recipe is validated against: field
names are the recipe keys, annotations their types, defaults make keys
optional. A field whose metadata carries ``{"env": True}`` names an
environment variable that must be set (API keys); a field with
``{"choices": [...]}`` only accepts those values; a field with ``{"path":
True}`` holds a path, resolved relative to the recipe file that sets it. An
options class may define ``required_env() -> [(key, variable)]`` for variables
needed by default (an API key for the provider's own host): the recipe check
reports those too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from geak_core.api.profiling import KernelCounters, ProfileLaunch, ProfileRecord

if TYPE_CHECKING:
    from geak_core.api.lineage import LineageState
    from geak_core.api.llm import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec
    from geak_core.api.model import Candidate, EvalResult
    from geak_core.api.tasks import Task

@dataclass(frozen=True)
class ComponentSpec:
    """One registered component: what the ``register`` callable records."""

    kind: str
    name: str
    factory: Callable[[Any], Any]
    options: type | None = None
    description: str = ""
    plugin: str = ""  # filled in by the plugin manager

    def build(self, options: Any = None) -> Any:
        """The component, built by the factory from ``options`` and checked against its
        kind (``as_component``): required members present, optional abilities filled."""
        where = f" of plugin {self.plugin!r}" if self.plugin else ""
        component = as_component(self.kind, self.factory(options), f"{self.kind} {self.name!r}{where}")
        if self.kind == "profiler" and not component.profiler_name:
            component.profiler_name = self.name  # the name its records carry
        return component


class Register(Protocol):
    """The callable handed to every ``geak_register_*`` hook."""

    def __call__(
        self,
        name: str,
        factory: Callable[[Any], Any],
        *,
        options: type | None = None,
        description: str = "",
    ) -> None: ...


# ---------------------------------------------------------------------------
# Component protocols
# ---------------------------------------------------------------------------


@runtime_checkable
class LLMBackend(Protocol):
    """Turns a chat request into ``request.n`` completions.

    ``identity()`` returns what distinguishes this backend's answers (provider,
    base URL, model); it is part of the key under which calls are recorded and
    replayed. Optional abilities are declared, with their defaults, by
    ``LLMBackendBase``.
    """

    def identity(self) -> dict[str, Any]: ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...


class LLMBackendBase:
    """Base class of LLM backends: the optional abilities and their defaults.

    * ``max_concurrency: int`` [4]: how many requests the agent sends this backend at once;
    * ``tool_calling: bool`` [False]: ``complete`` offers the model a request's ``tools`` and
      returns the calls it asks for (``ChatResponse.tool_calls``), and sends an assistant's
      calls and the tools' results (``Message.tool_calls``, role ``"tool"``) as its provider
      expects them. A backend without it is never given tools: a recipe whose generator needs
      them (``GeneratorBase.needs_tool_calling``) is refused before the run.
    """

    max_concurrency: int = 4
    tool_calling: bool = False


@dataclass
class Example:
    """A retrieved one-shot example."""

    id: str
    code: str
    description: str = ""
    score: float = 0.0
    source: str = ""


@dataclass
class RetrievalQuery:
    task: Task
    code: str | None = None  # the lineage's latest code, when there is one
    k: int = 1


@runtime_checkable
class Retriever(Protocol):
    def retrieve(self, query: RetrievalQuery) -> list[Example]: ...


class RetrieverBase:
    """Base class of retrievers (no optional abilities yet)."""


@dataclass(frozen=True)
class Closest:
    """How close one corpus entry comes to the tasks of one suite, against one kind of code:
    the task with the highest similarity and the task the retriever scores highest."""

    suite: str
    against: str  # "reference" (Task.reference) or "original" (Task.timing_baseline)
    similarity: float
    similarity_task: str  # task id; "" when no task shares anything with the entry
    score: float
    score_task: str  # "" when the retriever scores the entry 0 for every task


@dataclass(frozen=True)
class EntryAudit:
    entry: str  # Example.id
    closest: list[Closest]


@dataclass(frozen=True)
class Excess:
    """A corpus entry whose similarity to a task's code exceeds the threshold: the retriever
    never gives it to that task."""

    entry: str
    task: str  # Task.key
    against: str
    similarity: float


@dataclass(frozen=True)
class CorpusAudit:
    """What ``geak-core corpus audit`` reports: every corpus entry against every task given."""

    measure: str  # what ``similarity`` is, in words
    threshold: float  # above it, an entry is never retrieved for the task
    compared: dict[str, int]  # "<suite> <against>" -> tasks compared
    entries: list[EntryAudit]
    exceeding: list[Excess]


@runtime_checkable
class AuditableRetriever(Protocol):
    """A retriever whose corpus can be measured against benchmark tasks."""

    def audit(
        self, tasks: Sequence[Task], progress: Callable[[int, int], None] | None = None
    ) -> CorpusAudit:
        """Every entry's similarity to each task's reference (and original, where the task
        has a ``timing_baseline``); ``progress(done, total)`` after each task."""
        ...


@dataclass
class KnowledgeContext:
    task: Task
    hardware: HardwareProfile | None


@runtime_checkable
class KnowledgePack(Protocol):
    """Text injected into generation prompts."""

    title: str

    def render(self, context: KnowledgeContext) -> str: ...


class KnowledgePackBase:
    """Base class of knowledge packs (no optional abilities yet)."""


@dataclass(frozen=True)
class HardwareProfile:
    """Peak figures and tuning facts of one accelerator. Sources are cited."""

    name: str
    vendor: str  # "amd" | "nvidia"
    arch: str  # "gfx942", "sm_90", ...
    marketing_name: str
    peak_bandwidth_gbs: float  # HBM, GB/s (1e9 bytes/s)
    peak_tflops: dict[str, float]  # dense, per dtype name ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
    compute_units: int  # CUs (AMD) or SMs (NVIDIA)
    warp_size: int
    shared_memory_kib: int  # LDS per CU / shared memory per SM
    l2_cache_mib: float
    memory_gib: float
    last_level_cache_mib: float = 0.0  # Infinity Cache (AMD), 0 where none
    tuning_notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    device_name_patterns: tuple[str, ...] = ()  # substrings of the driver's device name

    def matches(self, device_name: str) -> bool:
        lowered = device_name.lower()
        return any(p.lower() in lowered for p in self.device_name_patterns)

    def peak_for(self, dtype: str) -> float | None:
        return self.peak_tflops.get(dtype)


@runtime_checkable
class Suite(Protocol):
    """A benchmark: a named set of tasks. Optional abilities are declared, with their
    defaults, by ``SuiteBase``."""

    name: str
    description: str

    def tasks(self) -> list[Task]: ...

    def get(self, task_id: str) -> Task: ...


class SuiteBase:
    """Base class of suites: the optional abilities and their defaults. ``geak-core eval``
    uses them when it judges a file of recorded replies.

    * ``resolve_record(record) -> str | None`` [None: the suite cannot tell]: the task a
      record answers when it names none in ``task`` or ``task_id`` (a suite may know its
      own file names or labels);
    * ``record_code(record, task_id) -> str | None`` [the code extracted from the record's
      ``predict`` reply]: the code to judge, for suites whose published protocol reads a
      reply differently; None: the reply holds no code;
    * ``unusable() -> dict[str, str]`` [none]: ids of tasks the suite found but cannot
      load, with the reason; a record of one is reported unjudged (``unusable_task``).
    """

    def resolve_record(self, record: dict[str, Any]) -> str | None:
        return None

    def record_code(self, record: dict[str, Any], task_id: str) -> str | None:
        from geak_core.api.extract import extract_code

        task: Task = self.get(task_id)  # type: ignore[attr-defined]
        found = extract_code(str(record.get("predict", "")), [e.name for e in task.entry_points])
        return found.code if found is not None else None

    def unusable(self) -> dict[str, str]:
        return {}


@dataclass
class EvalJob:
    task: Task
    candidate: Candidate


@runtime_checkable
class Evaluator(Protocol):
    """Judges candidates. Must never run candidate code in the calling process.
    Optional abilities are declared, with their defaults, by ``EvaluatorBase``."""

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult: ...

    def evaluate_many(self, jobs: Iterable[EvalJob]) -> Iterator[tuple[EvalJob, EvalResult]]: ...

    def close(self) -> None: ...


class EvaluatorBase:
    """Base class of evaluators: the optional abilities and their defaults.

    * ``max_parallel: int`` [1]: how many ``evaluate`` calls may usefully run at once
      (the agent holds at most this many candidates in judgement, and
      ``evaluate_many`` should keep that many busy);
    * ``unmet_requirements(task) -> list[str]`` [none]: why ``task`` cannot run on this
      evaluator's device; the agent skips such a task before any LLM call;
    * ``set_hardware(profile)`` [ignored]: the hardware profile the run resolved
      (``[hardware] profile``, or the one matching the device), for roofline figures;
    * ``judging() -> list[(task, candidate, seconds)]`` [none]: what is being judged now,
      longest first, for progress lines;
    * ``expected_costs(tasks) -> dict[task key, seconds]`` [none]: a rough guess of each
      task's cost, for ordering only: an executor that shares a batch between several
      judges hands out the costliest tasks first (a task it has no figure for keeps its
      place);
    * ``profile(task, candidate, profiler, seconds, *, case="", calls=1) -> ProfileRecord``
      [a record saying it cannot]: run a correct ``candidate`` on one of ``task``'s timed
      cases (``case`` names one; else the largest) under ``profiler`` (see ``Profiler``),
      ``calls`` calls profiled, within ``seconds``, in the same confinement as its judgement;
      never changes a verdict; failures come back as the record's ``error``.
    """

    max_parallel: int = 1

    def unmet_requirements(self, task: Task) -> list[str]:
        return []

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        return None

    def judging(self) -> list[tuple[str, str, float]]:
        return []

    def expected_costs(self, tasks: list[Task]) -> dict[str, float]:
        return {}

    def profile(self, task: Task, candidate: Candidate, profiler: Profiler, seconds: float, *,
                case: str = "", calls: int = 1) -> ProfileRecord:
        return ProfileRecord(getattr(profiler, "profiler_name", ""), candidate.id, case=case, calls=calls,
                             error="this evaluator cannot profile")


@runtime_checkable
class Profiler(Protocol):
    """Explains a correct candidate's speed with the hardware's counters; never judges.

    The evaluator (``EvaluatorBase.profile``) runs the candidate's own correct code on one
    of its task's timed cases in its sandboxed child, started as ``launch()`` says (the
    tool's command before the child's, and the child's part: a profiling region, a context
    manager), with ``{out}`` an empty folder the tool writes to; then ``read(out, output)``
    (``output``: what the tool printed) returns the kernels it saw, in launch order.
    ``read`` raises ``ValueError`` saying what is wrong when the tool's output cannot be read.
    Optional abilities are declared, with their defaults, by ``ProfilerBase``.
    """

    def launch(self) -> ProfileLaunch: ...

    def read(self, out: str, output: str) -> list[KernelCounters]: ...


class ProfilerBase:
    """Base class of profilers: the optional abilities and their defaults.

    * ``profiler_name: str`` [""]: the name records carry (the registry fills it in);
    * ``vendors: tuple[str, ...]`` [("nvidia", "amd")]: the GPU vendors the tool runs on;
    * ``unusable() -> list[str]`` [none]: why the tool cannot run on this machine (the tool
      not found, with where it was looked for); ``recipe check`` and ``doctor`` say it;
    * ``set_hardware(profile)`` [ignored]: the hardware profile the run resolved.
    """

    profiler_name: str = ""
    vendors: tuple[str, ...] = ("nvidia", "amd")

    def unusable(self) -> list[str]:
        return []

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        return None


@runtime_checkable
class Executor(Protocol):
    """Where judgements run: builds the recipe's evaluator there and hands back a proxy.

    ``evaluator(spec, options)`` returns an ``Evaluator`` that judges with the
    component ``spec`` (the recipe's ``[evaluator]`` choice) built from ``options``.
    The ``local`` executor builds it in this process, whose judge starts its
    sandboxed children on this machine; another executor may build judges on
    other machines and return an evaluator that sends them the jobs. Whatever
    the executor, lineages, LLM calls and the run store stay in the calling
    process, and candidate code runs only in the judge's sandboxed children.
    The returned evaluator's ``close()`` releases what the executor took for it.
    A problem with one of the executor's options raises ``errors.OptionError``
    naming the key, so that it can be reported at its line in the recipe.
    """

    def evaluator(self, spec: ComponentSpec, options: Any) -> Evaluator: ...


class ExecutorBase:
    """Base class of executors (no optional abilities yet)."""


@runtime_checkable
class TemplateSet(Protocol):
    """Jinja template sources by name (``system``, ``generate``, ``reflect``, ``optimize``)."""

    def names(self) -> Sequence[str]: ...

    def source(self, name: str) -> str: ...


class TemplateSetBase:
    """Base class of template sets (no optional abilities yet)."""


@dataclass
class ArchiveEntry:
    """One correct candidate shown to an optimizer prompt."""

    candidate_id: str
    code: str
    speedup: float
    strategy: str = ""
    latencies: list[dict[str, Any]] = field(default_factory=list)
    roofline_fraction: float | None = None
    # the profiler's class of its bottleneck with how close it runs to that limit
    # (``profiling.bound_line``: "memory-bound at 82 % of peak"); None where not profiled
    bottleneck: str | None = None


@runtime_checkable
class Optimizer(Protocol):
    """Keeps the history of correct candidates and shapes optimisation prompts.

    ``record`` sees every judged candidate; ``context`` returns the variables
    for the ``optimize`` template (at least ``archive``: a list of
    ``ArchiveEntry`` in ascending order of speedup); ``proposals`` is how many
    candidates one optimisation step asks for: the agent requests that many
    completions (``n``) of the ``optimize`` prompt and judges every one; 0
    means no optimisation (a lineage stops at its first correct candidate).
    The generator writes the optimisation prompt from ``context``; the policy
    decides what happens to a failed proposal.
    """

    proposals: int

    def record(self, task_id: str, candidate: Candidate, result: EvalResult) -> None: ...

    def context(self, task_id: str) -> dict[str, Any]: ...


class OptimizerBase:
    """Base class of optimizers: the optional abilities and their defaults.

    * ``record_profile(task_id, record)`` [ignored]: a recorded candidate
      (``record.candidate_id``) was profiled (``ProfileRecord``, its diagnosis None where the
      profile failed); an optimizer may show its bottleneck beside the candidate.
    """

    def record_profile(self, task_id: str, record: ProfileRecord) -> None:
        return None


@dataclass(frozen=True)
class TuneBudget:
    """How much one ``Tuner.tune`` call may spend: variants judged, and wall-clock seconds
    (no variant is sent to the judge after ``seconds``)."""

    candidates: int = 16
    seconds: float = 120.0


@dataclass
class TunedVariant:
    """One variant a tuner wrote: a candidate like any other (``origin`` ``"tune"``, its
    ``parent_id`` the tuned candidate), what it changed, and the judge's verdict (None when
    it was not judged)."""

    candidate: Candidate
    changes: str  # one line: "add_kernel.BLOCK_SIZE 256->512, num_warps 4->8"
    diff: str  # unified diff from the tuned candidate's code
    result: EvalResult | None = None


@dataclass
class TuneResult:
    """What one ``Tuner.tune`` call produced.

    ``variants``: the variants, in the order the tuner ranked them (judged or not);
    ``best``: the fastest correct variant whose speed was measured (None: none was, or none
    was judged); the caller keeps it only if it beats the tuned candidate's own verdict.
    ``notes``: why less than a full tuning happened (no knobs, no judge, no timing, budget).
    """

    variants: list[TunedVariant] = field(default_factory=list)
    best: TunedVariant | None = None
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Tuner(Protocol):
    """Searches a correct candidate's launch configuration without the LLM.

    ``tune(task, candidate, judge, budget)`` writes variants of ``candidate`` (the same
    kernel with other block sizes, warps, stages...), judges at most ``budget.candidates``
    of them with ``judge`` (the run's evaluator: correctness and timing, as for any
    candidate) within ``budget.seconds``, and returns them with the fastest correct one.
    With ``judge`` None it judges nothing and returns the ranked variants for the caller
    to judge. It never runs candidate code itself. Optional abilities are declared, with
    their defaults, by ``TunerBase``.
    """

    def tune(self, task: Task, candidate: Candidate, judge: Evaluator | None,
             budget: TuneBudget) -> TuneResult: ...


@dataclass(frozen=True)
class TuningReport:
    """What tuning one correct candidate of a lineage found, as the next ``optimize`` prompt
    may show it (``RoundContext.tuning``).

    ``judged`` variants were judged, ``correct`` of them correct; ``changes`` are the kept
    (faster) variant's changed knobs, one per line (``add_kernel.BLOCK_SIZE 256->512``),
    empty when none was kept; ``speedup_before`` is the tuned candidate's, ``speedup_after``
    the kept variant's."""

    candidate_id: str
    judged: int
    correct: int
    changes: tuple[str, ...] = ()
    speedup_before: float | None = None
    speedup_after: float | None = None


class TunerBase:
    """Base class of tuners: the optional abilities and their defaults.

    * ``set_hardware(profile)`` [ignored]: the hardware profile the run resolved, whose
      limits (warp size, shared memory) bound the variants.
    """

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        return None


# ---------------------------------------------------------------------------
# The GEAK modules: generator, reflector and the policy that sequences them
# ---------------------------------------------------------------------------

ROUND_KINDS: tuple[str, ...] = ("generate", "restart", "reflect", "optimize")
TUNE_KIND = "tune"  # the origin of a tuned variant, and the plan after_round sees it in
TOOL_DRAFT = "tool"  # the origin of a draft a conversing round's model had judged through a tool


@dataclass(frozen=True)
class RoundPlan:
    """What a lineage's next round is, as the policy decides it.

    ``kind``: ``generate`` (the first round), ``restart`` (a fresh strategy after
    a debugging trap), ``reflect`` (fix the lineage's failed candidate) or
    ``optimize`` (improve on the correct ones). The agent also hands a policy's
    ``after_round`` a plan of kind ``tune`` (``TUNE_KIND``, never returned by
    ``next_round``): the faster variant a tuner found of a round's correct candidate.
    ``attempt`` / ``max_attempts`` number a fix (1-based) within its limit;
    ``fixing_optimized`` says the candidate being fixed came from an
    optimisation step.
    """

    kind: str
    attempt: int = 0
    max_attempts: int = 0
    fixing_optimized: bool = False


@dataclass(frozen=True)
class Reflection:
    """One entry of a lineage's memory (Reflexion): what was tried and why it failed."""

    iteration: int
    kind: str  # the round that produced the failed candidate
    candidate_id: str
    strategy: str  # what was tried, as the model named it
    failure: str  # why it failed: the judge's stage and reason, one line
    note: str = ""  # what the model said about its attempt (its reply outside the code)


@dataclass
class RoundContext:
    """Everything a generator or reflector may put in one round's prompt.

    ``render(name, **variables)`` renders a template of the recipe's template
    set; ``system`` is the rendered system prompt. ``examples`` are the
    retrieved examples (best first; empty when ``[retriever] rounds`` leaves
    this kind of round out). ``optimizer`` holds the optimizer's ``context``
    for an ``optimize`` round, and ``tuning`` what the lineage's latest tunings
    found (oldest first; empty when nothing was tuned, or no variant judged).
    ``profile`` is what the profiler found of the lineage's latest profiled correct
    candidate (an optimize round: the one it improves on where profiled; None without
    one, or with ``[profiler] in_prompts = false``).
    ``lineage`` is read-only here: prompts are chosen without side effects.
    """

    plan: RoundPlan
    task: Task
    view: dict[str, Any]  # task.prompt_view(): what a prompt may show
    lineage: LineageState
    iteration: int
    system: str
    render: Callable[..., str]
    examples: list[Example] = field(default_factory=list)
    knowledge: list[dict[str, str]] = field(default_factory=list)
    hardware: str | None = None
    optimizer: dict[str, Any] = field(default_factory=dict)
    proposals: int = 1
    tuning: list[TuningReport] = field(default_factory=list)
    profile: ProfileRecord | None = None


@runtime_checkable
class Generator(Protocol):
    """Writes the prompts that ask for new code: ``generate``, ``restart`` and ``optimize``."""

    def messages(self, round: RoundContext) -> list[Message]: ...


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call of a conversing round gave: the result as the model is sent it
    (``content``: the tool's answer as JSON, or what was wrong with the call), whether the call
    failed (``is_error``), and the seconds the tool took (judging, profiling, tuning)."""

    content: str
    is_error: bool = False
    seconds: float = 0.0


@runtime_checkable
class ToolSession(Protocol):
    """One round's conversation with the model, lent by the agent to a generator that holds it
    (``GeneratorBase.converse``).

    ``tools`` are offered to the model in every turn: ``show_task`` and ``judge``, and
    ``profile`` and ``tune`` where they can run here, their arguments bound to the round's
    task (the model gives only the code). ``ask(messages, tool_choice)`` is one turn: a
    request recorded under the round's slot and the turn's number (a resumed run is served
    the recorded reply) and counted against the run's LLM budget. ``call(call)`` runs one call
    the model asked for with the run's judge and store: the code a ``judge``, ``profile`` or
    ``tune`` call gives is a candidate of the run (origin ``TOOL_DRAFT``) judged and stored
    like any other; a call that is wrong in any way (an unknown tool, arguments that are not
    valid) comes back as an error outcome saying why, never as an exception. ``refuse(call,
    reason)`` answers a call without running it (the generator's own limit reached). Every
    call is stored with its result (a ``tool_call`` event), and each call run counts, with its
    seconds, against the run's tool budget (``[run] max_tool_calls``, ``max_tool_seconds``).
    A run budget that is spent, or a fatal LLM error, raises out of ``ask`` and ``call``: the
    generator lets it through, and the run stops there as it does after any LLM call.
    """

    tools: list[ToolSpec]

    def ask(self, messages: list[Message], tool_choice: str = "auto") -> ChatResponse: ...

    def call(self, call: ToolCall) -> ToolOutcome: ...

    def refuse(self, call: ToolCall, reason: str) -> ToolOutcome: ...


class GeneratorBase:
    """Base class of generators: the optional abilities and their defaults.

    * ``needs_tool_calling: bool`` [False]: the generator offers the model tools
      (``ChatRequest.tools``), so it needs a backend with ``LLMBackendBase.tool_calling``;
      ``recipe check`` and ``run`` refuse a recipe that pairs it with one without. The agent
      then lets it hold every round's conversation (``converse``) instead of asking once.
    * ``converse(round, messages, session) -> str`` [one turn, no tool called]: a round held
      as a conversation through ``session`` (``ToolSession``), starting from ``messages``
      (this generator's, or the reflector's for a ``reflect`` round); returns the model's
      final reply. The round's candidate is then the model's last draft the judge found
      correct, else the code of that final reply, else its last draft (one candidate a round:
      ``[optimizer] proposals`` does not apply).
    """

    needs_tool_calling: bool = False

    def converse(self, round: RoundContext, messages: list[Message], session: ToolSession) -> str:
        return session.ask(messages, tool_choice="none").texts[0]


@runtime_checkable
class Reflector(Protocol):
    """Writes the prompt that asks to fix a failed candidate, and keeps what failures taught.

    ``remember`` turns one failed candidate (with the reply that produced it)
    into a ``Reflection``, stored in the lineage's memory; ``messages`` writes a
    ``reflect`` round's prompt, showing as much of that memory as it chooses.
    """

    def messages(self, round: RoundContext) -> list[Message]: ...

    def remember(self, iteration: int, kind: str, candidate: Candidate, result: EvalResult,
                 reply: str) -> Reflection: ...


class ReflectorBase:
    """Base class of reflectors (no optional abilities yet)."""


@runtime_checkable
class Policy(Protocol):
    """The debugging-trap policy: which round comes next, and what a round's verdicts change.

    ``next_round`` only reads the lineage (no side effects); ``after_round``
    advances it with the round's candidates and verdicts (proposal order) and
    returns whether the lineage improved (a first correct candidate, or a
    faster one). A ``restart`` plan makes the agent abandon the lineage's
    approach (``LineageState.restart``) before the generator writes the prompt.
    After tuning a round's correct candidate, ``after_round`` is called again with
    a ``tune`` plan and the one variant kept (correct, and faster than the tuned
    candidate), so that the lineage may go on from it.
    """

    def next_round(self, lineage: LineageState) -> RoundPlan: ...

    def after_round(self, lineage: LineageState, plan: RoundPlan,
                    judged: list[tuple[Candidate, EvalResult]]) -> bool: ...


class PolicyBase:
    """Base class of round policies (no optional abilities yet)."""


# ---------------------------------------------------------------------------
# The component kinds: one table drives hooks, registries, recipe sections and wiring
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ComponentKind:
    """One kind of component a plugin can register.

    ``hook`` is the register hook (generated in ``geak_core.api.hookspecs``);
    ``section`` and ``key`` say where a recipe names the component
    (``[section] key = "name"``), ``default`` which one is used when it names
    none (None: the key is required). With ``options`` the section's other
    keys are the chosen component's options; otherwise the section is one of
    core's (``[hardware]``, ``[knowledge]``, ``[prompts]``) and ``key`` names the
    component(s) there. ``many``: the key holds a list of names; ``extra``:
    values accepted beside the registered names (``"auto"``). ``base`` is the class that
    declares the kind's optional abilities with their defaults (see ``as_component``).
    """

    name: str
    hook: str
    protocol: type
    plural: str  # what the hook registers, for its docstring and listings
    section: str
    key: str = "name"
    default: str | None = None
    options: bool = True
    many: bool = False
    extra: tuple[str, ...] = ()
    base: type | None = None  # declares the optional abilities (None: the kind has none)


COMPONENT_KINDS: tuple[ComponentKind, ...] = (
    ComponentKind("llm_backend", "geak_register_llm_backends", LLMBackend, "LLM backends", "llm",
                  key="backend", base=LLMBackendBase),
    ComponentKind("suite", "geak_register_suites", Suite, "benchmark suites", "suite", default="rocm",
                  base=SuiteBase),
    ComponentKind("evaluator", "geak_register_evaluators", Evaluator, "evaluators (judges)", "evaluator",
                  default="triton", base=EvaluatorBase),
    ComponentKind("retriever", "geak_register_retrievers", Retriever, "example retrievers", "retriever",
                  default="none", base=RetrieverBase),
    ComponentKind("knowledge_pack", "geak_register_knowledge_packs", KnowledgePack, "knowledge packs",
                  "knowledge", key="packs", options=False, many=True, base=KnowledgePackBase),
    ComponentKind("hardware_profile", "geak_register_hardware_profiles", HardwareProfile,
                  "hardware profiles", "hardware", key="profile", default="auto", options=False,
                  extra=("auto",)),
    ComponentKind("prompt_templates", "geak_register_prompt_templates", TemplateSet,
                  "prompt template sets", "prompts", key="set", default="default", options=False,
                  base=TemplateSetBase),
    ComponentKind("generator", "geak_register_generators", Generator, "generators (new-code prompts)",
                  "generator", default="geak", base=GeneratorBase),
    ComponentKind("reflector", "geak_register_reflectors", Reflector, "reflectors (fix prompts, memory)",
                  "reflector", default="geak", base=ReflectorBase),
    ComponentKind("optimizer", "geak_register_optimizers", Optimizer, "optimizers", "optimizer",
                  default="none", base=OptimizerBase),
    ComponentKind("tuner", "geak_register_tuners", Tuner, "tuners (launch-configuration search)",
                  "tuner", default="none", base=TunerBase),
    ComponentKind("policy", "geak_register_policies", Policy, "round policies (debugging trap)",
                  "policy", default="geak", base=PolicyBase),
    ComponentKind("executor", "geak_register_executors", Executor, "executors (where judgements run)",
                  "executor", default="local", base=ExecutorBase),
    ComponentKind("profiler", "geak_register_profilers", Profiler, "profilers (hardware counters)",
                  "profiler", default="none", base=ProfilerBase),
)

KIND_BY_NAME: dict[str, ComponentKind] = {k.name: k for k in COMPONENT_KINDS}
KINDS: tuple[str, ...] = tuple(KIND_BY_NAME)
HOOK_FOR_KIND: dict[str, str] = {k.name: k.hook for k in COMPONENT_KINDS}


# ---------------------------------------------------------------------------
# Optional abilities: declared once, by each kind's base class, never probed
# ---------------------------------------------------------------------------


def optional_abilities(kind: ComponentKind) -> tuple[str, ...]:
    """The optional abilities of ``kind``: the public members its base class defines."""
    if kind.base is None:
        return ()
    return tuple(sorted(n for n in vars(kind.base) if not n.startswith("_")))


def required_members(kind: ComponentKind) -> tuple[str, ...]:
    """The members of ``kind``'s protocol: its methods and attributes (none for a kind without
    a base, whose components are instances of the protocol class)."""
    if kind.base is None:
        return ()
    own = vars(kind.protocol)
    return tuple(sorted(n for n in {*own, *own.get("__annotations__", {})} if not n.startswith("_")))


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def misspelt_abilities(kind: ComponentKind, names: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, ability)`` for each public name that is not a member of ``kind`` but lies
    within a small edit distance of one of its optional abilities (one edit for an ability
    of fewer than 10 characters, two otherwise): a misspelt ability would otherwise be
    ignored and its default used."""
    abilities = optional_abilities(kind)
    known = {*abilities, *required_members(kind)}
    found = []
    for name in sorted(set(names)):
        if name.startswith("_") or name in known:
            continue
        for ability in abilities:
            if 0 < _edit_distance(name, ability) <= (1 if len(ability) < 10 else 2):
                found.append((name, ability))
    return found


def check_abilities(kind: ComponentKind, names: Iterable[str], label: str) -> None:
    """Raise ``PluginError`` naming every misspelt ability among ``names``."""
    from geak_core.api.errors import PluginError

    misspelt = misspelt_abilities(kind, names)
    if misspelt:
        said = "; ".join(f"{name!r} looks like the optional ability {ability!r}" for name, ability in misspelt)
        raise PluginError(f"{label}: {said} of {kind.base.__name__ if kind.base else kind.name} "
                          f"(rename it to the ability, or to something not so close)")


class _Filled:
    """A component that does not subclass its kind's base: its own members first, then the
    base's defaults for the optional abilities it does not define."""

    def __init__(self, component: Any) -> None:
        object.__setattr__(self, "_component", component)

    def __getattr__(self, name: str) -> Any:  # only for names the wrapper itself lacks
        if name == "_component":
            raise AttributeError(name)
        return getattr(self._component, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._component, name, value)

    def __repr__(self) -> str:
        return repr(self._component)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the component itself, filled again where it is loaded (a judge process:
        the profiler ``ProcessJudges.profile`` sends); its class is made at run time."""
        kind = next(k.name for k in COMPONENT_KINDS if k.base is not None and isinstance(self, k.base))
        return as_component, (kind, self._component)


def _delegate(name: str) -> property:
    return property(lambda self: getattr(self._component, name))


_FILLED: dict[tuple[type, frozenset[str]], type] = {}


def as_component(kind_name: str, component: Any, label: str = "") -> Any:
    """``component`` as a ``kind_name`` component: every optional ability present.

    A component that subclasses its kind's base class is returned as it is. One that does
    not (a third-party class written against the protocol alone) is returned wrapped: its
    own members are used, and the base's defaults stand in for the abilities it lacks.
    Either way a public name within a small edit distance of an optional ability
    (``misspelt_abilities``) raises ``PluginError``. Required members are not checked here:
    a component lacking one fails where it is used, as a protocol promises nothing more.
    """
    kind = KIND_BY_NAME.get(kind_name)
    if kind is None or kind.base is None:
        return component
    label = label or f"{kind_name} {type(component).__name__}"
    present = set(dir(component))
    check_abilities(kind, present, label)
    if isinstance(component, kind.base):
        return component
    abilities = optional_abilities(kind)
    own = frozenset(a for a in abilities if a in present)
    if own == set(abilities):
        return component
    key = (kind.base, own)
    if key not in _FILLED:
        members = {name: _delegate(name) for name in own}
        _FILLED[key] = type(f"Filled{kind.base.__name__}", (_Filled, kind.base), members)
    return _FILLED[key](component)
