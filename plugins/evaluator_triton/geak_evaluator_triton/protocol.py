"""The message protocol between the judge and its children, in one place.

Children send frames (dicts with a ``kind``) on the sandbox channel; the judge
answers some of them through the child's stdin. Who sends what:

=============  =========================  ==============================================
kind           sent by                    carries / what happens next
=============  =========================  ==============================================
``cases``      reference                  the case table, skips, ``custom_compare``
``imported``   candidate                  :class:`ImportedFrame`: contract problems and
                                          guard findings of the import, its autotuners;
                                          the child waits for a :data:`Plan` (or
                                          :data:`ABORT`)
``autotuners`` reference                  after its import: its autotuners (``kernel``,
                                          ``configs``) and the ``cases`` it runs; the judge
                                          extends its deadline (``autotuning``)
``autotune``   reference, candidate       one of its kernels starts tuning a key it has not
                                          seen (``kernel``, ``configs``, ``key``: its k-th)
``autotuned``  reference, candidate       that kernel's choice is made (``seconds``;
                                          ``failed``: the tuning raised)
``start``      reference, candidate,      a run begins (``stage``, ``case``, ``seed``;
               timer, eager               stage ``warm-up``: the timer's or eager's
                                          baseline warm-up); with ``plan["gate"]`` the
                                          child waits for :data:`GO` (the device is free
                                          of timing)
``warmed``     timer, eager               the baseline's warm-up is done (the timer's
                                          carries each case's estimated time)
``compiling``  candidate (gated plan)     Triton is about to compile one of its kernels
                                          in this run: the judge lets the device go; when
                                          the compile is done the child sends ``start``
                                          again (``resume``) and waits for :data:`GO`
``ran``        candidate (gated plan)     the run (and its rerun) is over and its outputs
                                          are on the host: the device is free again; the
                                          ``run`` frame follows
``run``        reference, candidate       the run's ``outputs`` (+ ``checks`` and
                                          ``rerun_checks``: :class:`RunChecks`;
                                          ``rerun``, ``weak``, ``oracle``)
``error``      reference, candidate       a run raised (``exception``, ``message``,
                                          ``error`` traceback)
``checked``    candidate (timing asked)   every planned run is done; the child waits for
                                          ``{"prepare": {"seed": S}}`` or :data:`ABORT`
``prepared``   candidate (timing asked)   its timed inputs are prefetched on the host
                                          (``Harness.prefetch``); the child waits for
                                          ``{"time": {"seed": S}}`` (the judge holds the
                                          device exclusively) or :data:`ABORT`, then
                                          answers timing commands (below)
``session_ready`` timer                   answers ``{"session": {"flush_bytes", "sample"}}``: it
                                          takes timing commands until ``done``
``case_ready`` candidate, timer           answers ``{"case": {...}}``: inputs drawn,
                                          warm-up done (``launch_us``, ``estimate_ms``,
                                          ``call_ms``; ``calling_cpu``: the CPU its
                                          calling thread took, asked by ``cpu``;
                                          ``beside``: threads left on that CPU)
``block``      candidate, timer           answers ``{"block": {...}}``: :class:`BlockFrame`,
                                          the calls' latencies, gaps, own launches, sampled
                                          and kept outputs, ``late_at`` calls; the
                                          candidate's guard findings (:class:`BlockChecks`)
``case_done``  candidate, timer           answers ``{"case_done": True}``:
                                          :class:`CaseDoneFrame`, the candidate's changed
                                          inputs (``mutated``)
``verified``   candidate                  after the session's ``done``: the whole outputs
                                          of timed calls it kept (per case), whose count
                                          each ``block`` gave (``deferred``)
``timing``     eager                      one case timed: medians, spreads, gaps
``timed``      eager                      every case is timed: the device is free again
``timing_outputs`` eager                  a timed case's last outputs (after ``timed``)
``setup_error`` / ``import_error``        the harness / the module under test failed
``ready``      profile                    its warm-up call is done (``case``): the child
                                          waits for :data:`GO` (the judge holds the device
                                          alone), then runs the profiled calls
``done``       profile                    the profiled calls are over: the device is free
=============  =========================  ==============================================

Timing commands (``timed_calls.serve``) are sent by the judge's timing session
(``timing_session.RemoteSide``); a call that raises is answered with ``error``
(stage ``timing``).

The judge's side reads every child's frames through :class:`FrameHandler`, so
the dispatch is written once.

The findings of the judge's runtime checks travel in the TypedDicts below
(:class:`ImportedFrame`, :class:`RunChecks`, :class:`BlockFrame` with
:class:`BlockChecks`, :class:`CaseDoneFrame`); each field names the module of
``checks/`` that fills it in the child and reads it in the judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from geak_evaluator_triton.autotuning import AutotunerInfo

CASES = "cases"
IMPORTED = "imported"
START = "start"
COMPILING = "compiling"
RAN = "ran"
RUN = "run"
ERROR = "error"
CHECKED = "checked"
PREPARED = "prepared"
WARMED = "warmed"
TIMING = "timing"
TIMED = "timed"
TIMING_OUTPUTS = "timing_outputs"
VERIFIED = "verified"
SETUP_ERROR = "setup_error"
IMPORT_ERROR = "import_error"
READY = "ready"
DONE = "done"

GO: dict[str, Any] = {"go": True}
ABORT: dict[str, Any] = {"abort": True}


class Plan(TypedDict, total=False):
    """What a child runs: cases per stage, seeds per case, and how."""

    seeds: list[int]
    stage1: list[str]
    stage2: list[str]
    case_seeds: dict[str, dict[str, list[int]]]  # stage -> case -> seeds
    no_rerun: list[str]  # cases without a determinism rerun (heavy ones)
    determinism: bool
    oracle: bool  # reference only: also return the harness oracle's outputs
    gate: bool  # wait for GO after each ``start`` (several children share the device)


class TimingOptions(TypedDict, total=False):
    warmup_ms: float
    rep_ms: float  # the most time one case's timed loop may take
    late_rep_ms: float  # the same once a case's late calls count (0 or absent: rep_ms)
    late_hold_us: float  # the busy-wait once a case's late calls count (0 or absent: its first one)
    repetitions: int  # > 0: exactly this many (no adaptive stop)
    min_repetitions: int
    max_repetitions: int
    # The aggregate speedup's precision: each case stops once both medians' 95 % intervals are
    # within target_ci / sqrt(its weight) (timing_loop.targets).
    target_ci: float
    weighting: str  # "sum": a case weighs its share of the baseline's time; "equal": 1/n each
    l2_flush: bool
    flush_bytes: int
    queue_ahead_us: float  # the least busy-wait before a timed call (timed_calls.hold_for); 0: none



class LaunchCounts(TypedDict):
    """A run's Triton launches, sorted (``checks.launches``)."""

    candidate: int  # of kernels defined in the candidate's file
    harness: int  # the harness's own, outside the entry points
    other: list[str]  # kernels of other files an entry point launched: "name (defined in ...)"


class RunChecks(TypedDict):
    """The guards' findings of one correctness run (a ``run`` frame's ``checks``, and its
    ``rerun_checks`` for the determinism rerun)."""

    launches: LaunchCounts  # checks.launches
    compute: list[str]  # checks.torch_compute: torch/numpy calls from the candidate's file
    mutated: list[str]  # checks.input_mutation: paths of the inputs the run changed
    violations: list[str]  # checks.tampering: what the candidate changed in its process
    objects: list[str]  # checks.output_objects: outputs that are not the judge's buffers or plain values


class ImportedFrame(TypedDict, total=False):
    """``imported``: the candidate is imported (or not); the child waits for its plan."""

    kind: str
    contract: list[str]  # checks.contract: problems with the entry points
    violations: list[str]  # checks.tampering, after the import
    import_launches: LaunchCounts  # checks.launches: what the import itself launched
    import_s: float
    autotuners: list[AutotunerInfo]  # autotuning: the module's autotuners (the budget's allowance)


class BlockChecks(TypedDict):
    """What a candidate's child adds to each ``block`` frame, after the block's calls."""

    violations: list[str]  # checks.tampering
    compute: list[str]  # checks.torch_compute, over the block's calls


class BlockFrame(TypedDict, total=False):
    """``block``: one block of timed calls of one side (``timed_calls.TimedSide.block``),
    with a candidate's :class:`BlockChecks`."""

    kind: str
    latencies: list[float]  # per call, ms (CUDA events)
    gaps: list[float]  # per call, ms: the block's host clock beyond its device span (checks.side_work)
    own: list[int]  # per call, launches of the candidate's kernels (checks.launches)
    samples: list[Any]  # per call, outputs at random positions (checks.timed_outputs)
    verified: list[Any]  # (call number, whole outputs) of the calls picked (checks.timed_outputs)
    deferred: int  # whole copies kept for the ``verified`` frame after the session instead
    late_at: list[int]  # calls queued after the device passed their start events (checks.late_calls)
    objects: list[str]  # outputs not the judge's buffers or plain values, over the block (checks.output_objects)
    device_ms: float
    wall_ms: float
    violations: list[str]  # a candidate's BlockChecks
    compute: list[str]


class CaseDoneFrame(TypedDict, total=False):
    """``case_done``: a side's case is over."""

    kind: str
    outputs: Any  # a trusted side's last outputs (eager's)
    mutated: list[str]  # checks.input_mutation: a candidate's timed inputs it changed
    mutates: list[str]  # inputs the side's first call of the case changed (restored before each call)


def where(frame: dict[str, Any] | None) -> str:
    frame = frame or {}
    return f"{frame.get('stage')} case {frame.get('case')!r} seed {frame.get('seed')}"


class FrameHandler:
    """Judge side: ``handle(frame)`` calls ``on_<kind>(frame)``; unknown kinds are kept aside."""

    def handle(self, frame: Any) -> Any:
        if not isinstance(frame, dict):
            return None
        kind = frame.get("kind")
        if kind is None:
            return None
        method = getattr(self, f"on_{kind}", None)
        if method is None:
            return self.on_other(frame)
        return method(frame)

    def on_other(self, frame: dict[str, Any]) -> Any:
        return None
