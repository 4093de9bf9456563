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

if TYPE_CHECKING:
    from geak_core.llm import ChatRequest, ChatResponse
    from geak_core.model import Candidate, EvalResult
    from geak_core.tasks import Task

KINDS: tuple[str, ...] = (
    "llm_backend",
    "retriever",
    "knowledge_pack",
    "evaluator",
    "hardware_profile",
    "suite",
    "prompt_templates",
    "optimizer",
)

HOOK_FOR_KIND: dict[str, str] = {
    "llm_backend": "geak_register_llm_backends",
    "retriever": "geak_register_retrievers",
    "knowledge_pack": "geak_register_knowledge_packs",
    "evaluator": "geak_register_evaluators",
    "hardware_profile": "geak_register_hardware_profiles",
    "suite": "geak_register_suites",
    "prompt_templates": "geak_register_prompt_templates",
    "optimizer": "geak_register_optimizers",
}


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
        return self.factory(options)


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
    replayed. ``max_concurrency`` bounds simultaneous requests.
    """

    max_concurrency: int

    def identity(self) -> dict[str, Any]: ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...


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


@dataclass
class KnowledgeContext:
    task: Task
    hardware: HardwareProfile | None


@runtime_checkable
class KnowledgePack(Protocol):
    """Text injected into generation prompts."""

    title: str

    def render(self, context: KnowledgeContext) -> str: ...


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
    """A benchmark: a named set of tasks."""

    name: str
    description: str

    def tasks(self) -> list[Task]: ...

    def get(self, task_id: str) -> Task: ...


@dataclass
class EvalJob:
    task: Task
    candidate: Candidate


@runtime_checkable
class Evaluator(Protocol):
    """Judges candidates. Must never run candidate code in the calling process.

    Core also reads these optional members, found by ``getattr`` with the default
    in brackets, so a minimal evaluator need not define them:

    * ``max_parallel: int`` [1]: how many ``evaluate`` calls may usefully run at
      once (the agent holds at most this many candidates in judgement, and
      ``evaluate_many`` should keep that many busy);
    * ``unmet_requirements(task) -> list[str]`` [none]: why ``task`` cannot run on
      this evaluator's device; the agent skips such a task before any LLM call;
    * ``set_hardware(profile)`` [ignored]: the hardware profile the run resolved.
    """

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult: ...

    def evaluate_many(self, jobs: Iterable[EvalJob]) -> Iterator[tuple[EvalJob, EvalResult]]: ...

    def close(self) -> None: ...


@runtime_checkable
class TemplateSet(Protocol):
    """Jinja template sources by name (``system``, ``generate``, ``reflect``, ``optimize``)."""

    def names(self) -> Sequence[str]: ...

    def source(self, name: str) -> str: ...


@dataclass
class ArchiveEntry:
    """One correct candidate shown to an optimizer prompt."""

    candidate_id: str
    code: str
    speedup: float
    strategy: str = ""
    latencies: list[dict[str, Any]] = field(default_factory=list)
    roofline_fraction: float | None = None


@runtime_checkable
class Optimizer(Protocol):
    """Keeps the history of correct candidates and shapes optimisation prompts.

    ``record`` sees every judged candidate; ``context`` returns the variables
    for the ``optimize`` template (at least ``archive``: a list of
    ``ArchiveEntry`` in ascending order of speedup); ``proposals`` is how many
    candidates one optimisation step asks for: the agent requests that many
    completions (``n``) of the ``optimize`` prompt and judges every one; 0
    means no optimisation (a lineage stops at its first correct candidate).
    """

    proposals: int

    def record(self, task_id: str, candidate: Candidate, result: EvalResult) -> None: ...

    def context(self, task_id: str) -> dict[str, Any]: ...
