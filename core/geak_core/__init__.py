"""geak-core: a plugin framework for LLM agents that write, check and speed up Triton kernels.

The package stands in five wings, each importing only those before it (docs/architecture.md):

* ``geak_core.api``: the data model and the contracts plugins are written against;
* ``geak_core.kit``: tools for plugins (the sandbox, tensor frames, the LLM HTTP client);
* ``geak_core.engine``: the plugin manager, recipes, the run store and the agent loop;
* ``geak_core.reporting``: stored runs read back (HTML report, data sets, transcripts);
* ``geak_core.cli``: the ``geak-core`` command.

The names a plugin author needs are re-exported here from ``geak_core.api``: ``hookimpl``
and ``hookspec``, the component protocols and their base classes, the data model, ``Task``
and ``Harness``, the LLM types and the errors (``from geak_core import hookimpl, SuiteBase,
Task``). The harness helpers (``randn``, ``launch``, ...) stay in ``geak_core.api.harness``.
Modules at their paths from before the wings (``geak_core.agent``) still import, with a
DeprecationWarning, until 1.0 (``geak_core._moved``).
"""

from geak_core import _moved  # noqa: F401  (first: the old module paths, before anything imports one)
from geak_core.api.components import (
    AuditableRetriever,
    ComponentSpec,
    EvalJob,
    Evaluator,
    EvaluatorBase,
    Example,
    Executor,
    ExecutorBase,
    Generator,
    GeneratorBase,
    HardwareProfile,
    KnowledgeContext,
    KnowledgePack,
    KnowledgePackBase,
    LLMBackend,
    LLMBackendBase,
    Optimizer,
    OptimizerBase,
    Policy,
    PolicyBase,
    Profiler,
    ProfilerBase,
    Reflection,
    Reflector,
    ReflectorBase,
    Register,
    RetrievalQuery,
    Retriever,
    RetrieverBase,
    RoundContext,
    RoundPlan,
    Suite,
    SuiteBase,
    TemplateSet,
    TemplateSetBase,
    ToolOutcome,
    ToolSession,
    Tuner,
    TunerBase,
)
from geak_core.api.errors import (
    GeakError,
    InputError,
    OptionError,
    PluginError,
    RecipeError,
    RecipeProblem,
    UnknownComponentError,
)
from geak_core.api.harness import Harness
from geak_core.api.hookspecs import hookimpl, hookspec
from geak_core.api.lineage import LineageState
from geak_core.api.llm import (
    ChatRequest,
    ChatResponse,
    FatalLLMError,
    LLMError,
    Message,
    NoCodeError,
    RetryableLLMError,
    ToolCall,
    ToolSpec,
    Usage,
)
from geak_core.api.model import Attempt, Candidate, EvalResult, RunSummary, ShapeResult, TaskSummary
from geak_core.api.profiling import (
    BOUNDS,
    Diagnosis,
    KernelCounters,
    ProfileLaunch,
    ProfileRecord,
    diagnose,
)
from geak_core.api.tasks import Case, DeviceInfo, EntryPoint, OutlierSpec, Requirement, Task

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # hooks
    "hookimpl", "hookspec",
    # components: the protocols, their base classes (optional abilities), what they exchange
    "AuditableRetriever", "ComponentSpec", "EvalJob", "Evaluator", "EvaluatorBase", "Example", "Executor",
    "ExecutorBase", "Generator", "GeneratorBase", "HardwareProfile", "KnowledgeContext", "KnowledgePack",
    "KnowledgePackBase", "LLMBackend", "LLMBackendBase", "Optimizer", "OptimizerBase", "Policy", "PolicyBase",
    "Profiler", "ProfilerBase", "Reflection", "Reflector", "ReflectorBase", "Register", "RetrievalQuery", "Retriever", "RetrieverBase",
    "RoundContext", "RoundPlan", "Suite", "SuiteBase", "TemplateSet", "TemplateSetBase", "ToolOutcome", "ToolSession",
    "Tuner", "TunerBase",
    # profiles: what a profiler reports and the bottleneck read from it
    "BOUNDS", "Diagnosis", "KernelCounters", "ProfileLaunch", "ProfileRecord", "diagnose",
    # the data model
    "Attempt", "Candidate", "EvalResult", "LineageState", "RunSummary", "ShapeResult", "TaskSummary",
    # tasks and their harness
    "Case", "DeviceInfo", "EntryPoint", "Harness", "OutlierSpec", "Requirement", "Task",
    # LLM types
    "ChatRequest", "ChatResponse", "FatalLLMError", "LLMError", "Message", "NoCodeError", "RetryableLLMError",
    "ToolCall", "ToolSpec", "Usage",
    # errors
    "GeakError", "InputError", "OptionError", "PluginError", "RecipeError", "RecipeProblem",
    "UnknownComponentError",
]
