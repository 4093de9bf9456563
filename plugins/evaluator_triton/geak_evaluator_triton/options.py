"""Options of the ``triton`` evaluator (the recipe's ``[evaluator]`` table)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from geak_core.api.model import DEFAULT_SPEEDUP_METHOD
from geak_core.api.scaling import SPEEDUP_METHODS


@dataclass
class TritonEvaluatorOptions:
    """How the judge runs, checks and times candidates. See docs/evaluator.md."""

    mode: str = field(default="auto", metadata={"choices": ["auto", "interpreter", "gpu"]})
    timeout_s: float = 600.0  # wall clock per candidate child at most (correctness, then timing)
    # Wall clock per reference child: a reference no judge has run before gets this; one an
    # earlier judge ran gets budget_scale times its own seconds then, at least budget_floor_s,
    # at most this (references that compile for minutes, or never finish, end here).
    reference_timeout_s: float = 300.0
    # References computed ahead of their candidates in evaluate_many (a benchmark, an agent's
    # batch), this many at once: -1 is half the judge's slots on GPUs, none under the
    # interpreter; 0 none.
    reference_prefetch: int = -1
    # A candidate's budget, once its task's reference has run: budget_scale times the
    # reference child's own seconds (its start and runs), at least budget_floor_s (compiling
    # and autotuning), plus a second a timed case, at most timeout_s. 0: timeout_s flat.
    budget_scale: float = 20.0
    budget_floor_s: float = 120.0
    # Time a child (a candidate's or a reference's) is allowed beyond its budget or timeout
    # for autotuning: this many seconds for each config of each autotuner its module has, at
    # each case it runs (a new key each, at most), at most autotune_allowance_max_s (the
    # autotuning module). 0: none.
    autotune_allowance_s: float = 1.0
    autotune_allowance_max_s: float = 600.0
    workers: int = 0  # 0: one per visible GPU, or min(4, CPUs) under the interpreter
    # Candidates checked at once on one GPU; their runs share it, timing always has it alone.
    candidates_per_gpu: int = 8
    # Of those, how many may run on the GPU at once (0: all). Processes are time-sliced on a
    # GPU: eight at once mostly wait for each other's slices; four let a run's host work
    # (inputs, guard checks, copies to the host) overlap the others' kernels.
    runs_per_gpu: int = 4
    # Triton's on-disk autotuning cache (TRITON_CACHE_AUTOTUNING) in every child: a kernel
    # whose source, configs and key were benchmarked before is not benchmarked again.
    autotune_cache: bool = True
    # A child per slot started ahead of need (Python, torch, Triton and the CUDA context up,
    # nothing of any job in it): "auto" on GPUs, where it saves each judgement ~2 s.
    spare_children: str = field(default="auto", metadata={"choices": ["auto", "on", "off"]})
    # When the reference's timed runs and the baseline's warm-up are prepared: "up_front" for
    # every candidate (a correct one is then timed in the same child), "when_correct" only
    # once a task has a correct candidate (checked first, then checked and timed in a second
    # child; a wrong one costs no timing work), "auto": up front while this judge has one
    # verdict in flight, when correct while it has several.
    prepare_timing: str = field(default="auto", metadata={"choices": ["auto", "up_front", "when_correct"]})
    # A task's first candidate starts as soon as the reference child has sent its case table,
    # and runs beside it, each comparison waiting for its reference output: "auto" on GPUs
    # (a CPU slot has one core's worth of work to give), "on" also under the interpreter.
    overlap_reference: str = field(default="auto", metadata={"choices": ["auto", "on", "off"]})
    # A reference whose case table an earlier judge recorded (same task, file, device and
    # options) is run only once a candidate needs it: its first run that produced outputs, or
    # its first run on a seed that is not the task's own. A candidate that fails at import or
    # on a fixed seed's run before that is decided without a reference child. "auto": while
    # this judge has several verdicts in flight (a benchmark, an agent's batch), where child
    # start-ups are what a verdict costs; "on" always; "off" never.
    lazy_reference: str = field(default="auto", metadata={"choices": ["auto", "on", "off"]})
    # Where the reference's outputs on the secret timing seed (which a correct candidate's
    # timed outputs are checked against) come from when a busy judge needs them: "timer", the
    # baseline's timer, warm already and running the reference (a task without
    # timing_baseline), else a reference child; "child", always a reference child.
    reference_timed_outputs: str = field(default="timer", metadata={"choices": ["timer", "child"]})
    seeds: list[int] | None = None  # None: the task's seeds
    secret_seeds: int = 1  # extra seeds drawn per judge session, unknown to candidates
    check_outliers: bool = True  # stage 2
    check_determinism: bool = True  # run stage-1 cases twice and compare
    heavy_case_mb: float = 64.0  # cases moving more than this are checked on one seed per stage
    static_checks: bool = True  # reject forbidden constructs before running anything
    # Children in their own user, PID, mount and network namespaces: they see no other process,
    # have no network, hold no capability outside, and die with the judge. "auto": wherever the
    # kernel allows it (as root, or with unprivileged user namespaces).
    isolation: str = field(default="auto", metadata={"choices": ["auto", "namespaces", "none"]})
    # Each child confines itself with Landlock before any job code runs: writes only to its own
    # folders, the user's home and the temporary folder hidden, no TCP, no signals out. Without
    # Landlock (Linux < 5.13) the judge refuses to run; "none" runs children unconfined (unsafe
    # for untrusted code: a candidate can then write into the project, the caches, the home).
    confinement: str = field(default="landlock", metadata={"choices": ["landlock", "none"]})
    child_memory_mb: int = 0  # host memory per child (RLIMIT_DATA); 0: half the machine's, >= 8 GiB
    child_processes: int = 1024  # processes and threads per child (its PID namespace's pid_max)
    child_open_files: int = 4096  # RLIMIT_NOFILE
    child_file_mb: int = 8192  # largest file a child may write (RLIMIT_FSIZE)
    # More environment variables (names or shell patterns) let through to children; the
    # allow-list (geak_core.kit.confinement.ENV_ALLOWED) and the credential filter still apply.
    child_env_allow: list[str] = field(default_factory=list)
    case_set: str = field(default="auto", metadata={"choices": ["auto", "small", "full"]})
    # A case's outputs may also differ from the reference's by this multiple of the
    # reference's own per-row error against the harness oracle (0: task tolerances only).
    noise_multiple: float = 4.0
    warmup_ms: float = 10.0  # per side, after the first call, on the first timed case (a quarter on later ones)
    rep_ms: float = 200.0  # the most one case's timed loop may take
    # The same, from where a case's late calls count (calls that wait for the host: the
    # host's jitter is in their latencies); 0: rep_ms.
    late_rep_ms: float = 0.0
    # The busy-wait before each call from where a case's late calls count, in microseconds
    # (0: the case's first one, HOLD_MARGIN x a call's host time; timing_loop.time_case).
    # These calls are late at any busy-wait (a call that waits for the device takes the
    # busy-wait into its host time), so most of its length is device time spent waiting.
    # Tried at 10 on 13 host-bound KernelBench-X references (2 x H200, 2026-11-28): ~1.5x
    # the calls, tighter cases, but 28 of 39 self-speedups within 0.03 against 81 of 89
    # without, outside their own intervals (docs/benchmarks.md). A short busy-wait puts
    # more of each call's host path between the events, and that part moves per process.
    late_hold_us: float = 0.0
    repetitions: int = 0  # > 0: exactly this many timed repetitions per side and case
    min_repetitions: int = 10
    max_repetitions: int = 2000
    # The aggregate speedup's 95 % interval: +-0.5 %. Each case's target is looser the less
    # it weighs in the aggregate (timing_loop.targets). 0.01 about halves the timing
    # of microsecond kernels, at a wider spread between judgements (docs/benchmarks.md).
    target_ci: float = 0.005
    l2_flush: bool = True
    # Bytes written before each timed call to flush the caches (0: twice the hardware
    # profile's L2 + last-level cache, at least 32 MiB; 256 MiB when no profile matched).
    flush_mib: float = 0.0
    # GPU busy-wait queued before each timed call so the host's launch path stays outside
    # the events: at least this, lengthened to 1.5x one call's host time (0: none).
    queue_ahead_us: float = 10.0
    # Timed calls of a case whose whole outputs are checked, in expectation, chosen at random
    # after each call (every call's outputs are also checked at random positions).
    verify_calls: float = 1.0
    # While timed, both sides' processes run on the same few CPUs (timing_session.timing_cpus):
    # the host's part of a call (its launches, a call that waits for the device) then runs
    # on the same cores for the baseline as for the candidate, not on wherever the
    # operating system placed each process among the judge's other children; each side's
    # calling thread runs alone on the first of them, the same core for both
    # (timing_session.calling_cpu).
    pin_timing_cpus: bool = True
    # The baseline's timer stopped (its process group) while the candidate's blocks run, as
    # the candidate's child always is while the baseline's run: each side resumed from a stop
    # before its blocks. Off: in identical worker processes it lessens the bias by role on
    # calls that wait for the host (7.2 to 2.8 %, bench/timing_processes.py), but in the
    # judge 13 host-bound references read no closer to 1.00 with it (47 of 52 self-speedups
    # within 0.03, against 73 of 76 without; docs/evaluator.md, timing step 2;
    # docs/benchmarks.md).
    pause_baseline: bool = False
    suspicious_speedup: float = 10.0
    # How a candidate's per-shape latencies make its headline speedup (``speedup``: the figure
    # that picks a task's best candidate and ranks the optimizer's history): mean_ratio (the
    # GEAK paper's mean of per-shape ratios), sum (GEAK-eval's code: total baseline time over
    # total candidate time) or geomean. All three are always kept (speedup_sum, ...).
    speedup_method: str = field(default=DEFAULT_SPEEDUP_METHOD, metadata={"choices": list(SPEEDUP_METHODS)})
    hardware: str = "auto"  # a hardware profile name, or auto-detect from the device
    extra_pythonpath: list[str] = field(default_factory=list)
    reference_cache_dir: str | None = None  # on-disk reference outputs (fixed seeds only)
    reference_cache_mb: int = 8192  # in-memory reference outputs kept across tasks
    triton_cache_dir: str | None = None  # default: ~/.cache/geak/triton/{reference,candidate}
    output_limit_kb: int = 64  # captured stdout/stderr per child (head + tail)
    max_result_mb: int = 16384  # largest frame from one child, and most bytes of its frames kept undigested

    def validate(self) -> list[str]:
        problems = []
        if self.mode not in ("auto", "interpreter", "gpu"):
            problems.append(f"mode must be auto, interpreter or gpu, not {self.mode!r}")
        if self.isolation not in ("auto", "namespaces", "none"):
            problems.append(f"isolation must be auto, namespaces or none, not {self.isolation!r}")
        if self.confinement not in ("landlock", "none"):
            problems.append(f"confinement must be landlock or none, not {self.confinement!r}")
        if min(self.child_memory_mb, self.child_processes, self.child_open_files, self.child_file_mb) < 0:
            problems.append("child limits must be >= 0 (0: the default)")
        if self.verify_calls < 0:
            problems.append("verify_calls must be >= 0")
        if self.case_set not in ("auto", "small", "full"):
            problems.append(f"case_set must be auto, small or full, not {self.case_set!r}")
        if self.speedup_method not in SPEEDUP_METHODS:
            problems.append(f"speedup_method must be mean_ratio, sum or geomean, not {self.speedup_method!r}")
        if self.budget_scale < 0 or self.budget_floor_s < 0:
            problems.append("budget_scale and budget_floor_s must be >= 0")
        if self.autotune_allowance_s < 0 or self.autotune_allowance_max_s < 0:
            problems.append("autotune_allowance_s and autotune_allowance_max_s must be >= 0")
        if self.reference_prefetch < -1:
            problems.append("reference_prefetch must be -1 (auto), 0 (off) or a count")
        if self.late_rep_ms < 0:
            problems.append("late_rep_ms must be >= 0 (0: rep_ms)")
        if self.late_hold_us < 0:
            problems.append("late_hold_us must be >= 0 (0: the case's first busy-wait)")
        if self.timeout_s <= 0 or self.reference_timeout_s <= 0:
            problems.append("timeouts must be positive")
        if self.workers < 0:
            problems.append("workers must be >= 0")
        if self.prepare_timing not in ("auto", "up_front", "when_correct"):
            problems.append(f"prepare_timing must be auto, up_front or when_correct, not {self.prepare_timing!r}")
        if self.reference_timed_outputs not in ("timer", "child"):
            problems.append(f"reference_timed_outputs must be timer or child, not {self.reference_timed_outputs!r}")
        if self.lazy_reference not in ("auto", "on", "off"):
            problems.append(f"lazy_reference must be auto, on or off, not {self.lazy_reference!r}")
        if self.overlap_reference not in ("auto", "on", "off"):
            problems.append(f"overlap_reference must be auto, on or off, not {self.overlap_reference!r}")
        if self.spare_children not in ("auto", "on", "off"):
            problems.append(f"spare_children must be auto, on or off, not {self.spare_children!r}")
        if self.candidates_per_gpu < 1:
            problems.append("candidates_per_gpu must be >= 1")
        if self.runs_per_gpu < 0:
            problems.append("runs_per_gpu must be >= 0 (0: no limit)")
        if self.noise_multiple < 0:
            problems.append("noise_multiple must be >= 0")
        if not 0 <= self.target_ci < 1:
            problems.append("target_ci must be in [0, 1)")
        if self.secret_seeds < 0:
            problems.append("secret_seeds must be >= 0")
        if self.seeds is not None and not self.seeds:
            problems.append("seeds, when given, must not be empty")
        if self.queue_ahead_us < 0:
            problems.append("queue_ahead_us must be >= 0")
        if self.flush_mib < 0:
            problems.append("flush_mib must be >= 0 (0: from the hardware profile)")
        if self.min_repetitions < 1 or self.max_repetitions < self.min_repetitions:
            problems.append("need 1 <= min_repetitions <= max_repetitions")
        return problems


def option_pairs(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (a bench's ``flag``, repeated) as :class:`TritonEvaluatorOptions`
    fields, VALUE in TOML syntax (a bare word is taken as a string); ValueError naming
    ``flag`` and the pair for one without ``=`` or whose KEY is no option."""
    from geak_core.engine.recipe import key_value

    known = {f.name for f in fields(TritonEvaluatorOptions)}
    values: dict[str, Any] = {}
    for pair in pairs:
        parsed = key_value(pair)
        if parsed is None or parsed[0] not in known:
            raise ValueError(f"{flag} {pair!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(known))}")
        values[parsed[0]] = parsed[1]
    return values


def option_flags(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """:func:`option_pairs` for a bench's command line: a bad pair ends the program
    (SystemExit) with the message naming it."""
    try:
        return option_pairs(pairs, flag)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
