"""Run a function in a fresh child process that cannot reach the caller.

The judge executes untrusted kernels only through this module. Each call
starts ``python -I -m geak_core.kit.sandbox`` with:

* its own process group (``start_new_session``); a wall-clock timeout, or the
  end of the run, kills the whole group, grandchildren included;
* a parent-death signal: the child is started from one long-lived thread of
  the caller and asks the kernel for ``SIGKILL`` when that thread ends, so
  killing the caller (any signal, ``-9`` included) ends its children; in a
  PID namespace the namespace's first process dies with it, and the kernel
  then ends every process inside, grandchildren included;
* an environment built from an allow-list (``geak_core.kit.confinement``): no
  variable outside it, whatever its name, reaches the child; ``HOME`` and
  ``TMPDIR`` are a private directory, removed afterwards;
* resource limits (``geak_core.kit.limits``): host memory, processes and threads,
  open files and file size, set before anything runs;
* optionally (``isolate=True``, where the kernel lets this user make them) new
  PID, network and mount namespaces, and a user namespace when not root: the
  child sees no other process and has no network;
* per job, a confinement (:class:`geak_core.kit.confinement.Confinement`, Landlock):
  writes only to its own directories and the GPU, no reads of hidden trees, no
  TCP, no signals or ``ptrace`` outside its own tree;
* stdout and stderr captured through pipes, keeping at most a head and a tail
  of ``output_limit`` bytes, so a chatty child cannot fill memory or disk;
* a private result channel: an inherited pipe (never a file), on which the
  child sends length-prefixed ``tensorio`` frames. The caller may answer each
  frame through the child's stdin, which is how a handshake can hold data back
  until the child has reached a given point.
* optionally (``wrapper``, :class:`Wrapper`) a tool that starts the child and
  watches it, a profiler: its command is put before the child's own, in the same
  process group, environment and private directory, and what it writes goes to
  a folder inside that directory, handed to the caller when the job ends.

The child side: ``entry`` names ``"module:function"``; the function is called
as ``function(args, channel)`` and whatever it returns is sent as the last
frame ``{"$return": value}``. The child then leaves through ``os._exit`` so
exit handlers registered by code it ran cannot add anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import queue
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from geak_core.kit import tensorio
from geak_core.kit.confinement import Confinement, child_environment
from geak_core.kit.limits import ChildLimits, explain_failure

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
PROVIDER_PREFIXES = (
    "OPENAI", "ANTHROPIC", "CLAUDE", "GEMINI", "GOOGLE", "VERTEX", "AZURE", "AWS", "HF_",
    "HUGGING", "MISTRAL", "COHERE", "GROQ", "TOGETHER", "DEEPSEEK", "OPENROUTER", "XAI",
    "FIREWORKS", "REPLICATE", "PERPLEXITY", "GITHUB", "GH_", "GITLAB", "LANGCHAIN", "LANGSMITH",
    "WANDB", "NPM_", "PYPI", "TWINE", "DOCKER", "SSH_", "GPG_", "GNUPG", "KUBE", "VAULT",
)
URL_SUFFIXES = ("_URL", "_URI", "_DSN")
DROPPED_EXACT = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT")

_FRAME = struct.Struct("<Q")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment minus anything that could carry a credential."""
    clean: dict[str, str] = {}
    for name, value in env.items():
        upper = name.upper()
        if any(marker in upper for marker in SECRET_MARKERS):
            continue
        if upper.startswith(PROVIDER_PREFIXES):
            continue
        if upper.endswith(URL_SUFFIXES) and "@" in value:
            continue
        if upper.startswith("PYTHON") or upper in DROPPED_EXACT:
            continue
        clean[name] = value
    return clean


def drop_credentials(environ: MutableMapping[str, str], keep: tuple[str, ...] = ()) -> list[str]:
    """Remove from ``environ`` (a judge's own environment) what ``scrub_env`` keeps from
    children, except the names starting with one of ``keep``; returns the names removed."""
    kept = scrub_env(dict(environ))
    dropped = [name for name in list(environ) if name not in kept and not name.startswith(keep)]
    for name in dropped:
        del environ[name]
    return dropped


@dataclass
class SandboxResult:
    """What came back from one child."""

    returncode: int | None
    messages: list[Any] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    wall_s: float = 0.0
    channel_error: str | None = None  # an undecodable or oversized frame
    waited_s: float = 0.0  # time the judge kept the child waiting (not counted against it)
    limits: ChildLimits = field(default_factory=ChildLimits)
    budget_note: str = ""  # why its deadline was where it was (Replier.budget_note), when it ran out

    @property
    def returned(self) -> Any:
        """The entry function's return value, or None if it did not return."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and "$return" in message:
                return message["$return"]
        return None

    @property
    def completed(self) -> bool:
        return any(isinstance(m, dict) and "$return" in m for m in self.messages)

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def describe_exit(self) -> str:
        if self.timed_out:
            waited = f", of which {self.waited_s:.0f} s waiting for the judge" if self.waited_s >= 1 else ""
            budget = f"; {self.budget_note}" if self.budget_note else ""
            return f"timed out after {self.wall_s:.0f} s{waited}{budget} (process group killed)"
        if self.channel_error:
            return self.channel_error
        name = self.signal_name
        limit = self.limit_note()
        if name == "SIGKILL":
            return "killed by SIGKILL (often: out of host memory)" + limit
        if name == "SIGXFSZ" and self.limits.file_mb:
            return f"killed by SIGXFSZ: it wrote a file larger than its limit of {self.limits.file_mb} MiB"
        if name:
            return f"crashed with {name}" + limit
        if self.returncode:
            return f"exited with status {self.returncode}" + limit
        return "exited normally"

    def limit_note(self) -> str:
        """A clause naming the resource limit the child ran into, or ""."""
        why = explain_failure(self.stderr, self.limits)
        return f" ({why})" if why else ""


class Replier:
    """Sends frames to the child's stdin (answers in a handshake)."""

    def __init__(self, outbox: queue.Queue[Any], child: SpareChild | None = None):
        self._outbox = outbox
        self._child = child
        self.excluded_s = 0.0  # time the judge kept the child waiting, not charged to it
        self._waiting_since: float | None = None
        self.limit_s: float | None = None  # the child's timeout, when the judge set another
        self.limit_note = ""
        self.allowed_s = 0.0  # time allowed beyond the timeout for work the judge learnt of
        self.allowance_note = ""

    def set_limit(self, seconds: float, note: str = "") -> None:
        """The child's timeout is ``seconds`` from now on (counted from its start, waits for the
        judge excluded): its budget, known once the judge knows more (a reference's time, say).
        ``note`` explains it in the verdict of a child that runs out of it."""
        self.limit_s = seconds
        self.limit_note = note

    def allow(self, seconds: float, note: str = "") -> None:
        """``seconds`` beyond the child's timeout (or the limit set), for work the judge
        learnt the child has to do, that its budget does not foresee (a kernel's autotuner
        benchmarking its configs at every new shape); replaces any earlier allowance.
        ``note`` explains it in the verdict of a child that runs out of time."""
        self.allowed_s = max(0.0, seconds)
        self.allowance_note = note

    def budget_note(self) -> str:
        """Why the child's deadline was where it was: the limit's note and the allowance's."""
        return "; ".join(note for note in (self.limit_note, self.allowance_note) if note)

    def send(self, obj: Any) -> None:
        self._outbox.put(obj)

    def exclude(self, seconds: float) -> None:
        """Extend the child's deadline by ``seconds`` the judge made it wait (for a device, say)."""
        self.excluded_s += max(0.0, seconds)

    @contextlib.contextmanager
    def judge_waiting(self) -> Iterator[None]:
        """The judge keeps the child waiting while this block runs (for a device, say): none
        of it counts against the child's timeout, also while the wait is still going on."""
        began = time.monotonic()
        self._waiting_since = began
        try:
            yield
        finally:
            self._waiting_since = None
            self.excluded_s += time.monotonic() - began

    def excluded_now(self) -> float:
        """Seconds excluded so far, an ongoing ``judge_waiting`` block included."""
        since = self._waiting_since
        return self.excluded_s + (time.monotonic() - since if since is not None else 0.0)

    def close(self) -> None:
        self._outbox.put(_CLOSE)

    def pause_child(self) -> None:
        """Stop the child's whole process group until :meth:`resume_child` (while another
        process times something the child must not disturb)."""
        if self._child is not None:
            self._child.pause()

    def resume_child(self) -> None:
        if self._child is not None:
            self._child.resume()

    def pin_child(self, cpus: Iterable[int] | None) -> int:
        """Put every thread of the child's process group on ``cpus`` (None: back on the judge's
        own CPUs); how many threads were moved (:func:`pin_group`)."""
        return self._child.pin(cpus) if self._child is not None else 0


_CLOSE = object()


class _TailBuffer:
    """Keeps the first and last ``limit // 2`` bytes of a stream."""

    def __init__(self, limit: int):
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.half:
                cut = len(self.tail) - self.half
                self.dropped += cut
                del self.tail[:cut]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes dropped ...]\n" if self.dropped else ""
        return (bytes(self.head).decode(errors="replace") + middle
                + bytes(self.tail).decode(errors="replace"))


def _drain(stream: Any, sink: _TailBuffer) -> None:
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            sink.feed(chunk)
    except (OSError, ValueError):
        pass


BIG_BUFFER = 1 << 20


def _room(size: int) -> bytearray | mmap.mmap:
    """Writable room for ``size`` bytes about to be read in. A large one is a fresh anonymous
    mapping: the interpreter zero-fills a bytearray with its lock held, so a judge reading
    the outputs of eight children at once took them in one after another (an H100 host,
    ``bench/judge_host.py --rooms``: 128 MiB buffers read from memory by eight threads,
    1.28 GB/s into bytearrays, 4.83 GB/s into mappings); the kernel zeroes a mapping's
    pages as the read touches them, the lock released."""
    return mmap.mmap(-1, size) if size >= BIG_BUFFER else bytearray(size)


def _read_exact(fd: int, size: int) -> bytearray | mmap.mmap | None:
    out = _room(size)
    view = memoryview(out)
    got = 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            return None
        got += n
    return out


def _write_frame(fd: int, obj: Any) -> None:
    chunks = tensorio.dump_chunks(obj)
    payload = [_FRAME.pack(tensorio.blob_size(chunks)), *chunks]
    for chunk in payload:
        view = memoryview(chunk).cast("B")
        while view.nbytes:
            written = os.write(fd, view)
            view = view[written:]


# ---------------------------------------------------------------------------
# Starting children
# ---------------------------------------------------------------------------

_namespaces: bool | None = None


def namespaces_available() -> bool:
    """Whether children can get their own PID, network and mount namespaces here (as root,
    or through a user namespace): a short-lived child tries exactly what a sandboxed one does."""
    global _namespaces
    if _namespaces is None:
        try:
            probe = subprocess.run([sys.executable, "-I", "-m", "geak_core.kit.sandbox", "--probe-namespaces"],
                                   capture_output=True, timeout=30)
            _namespaces = probe.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _namespaces = False
    return _namespaces


def _child_command(result_fd: int, preload: tuple[str, ...] = (), wrapper: Wrapper | None = None,
                   workdir: str = "") -> list[str]:
    command = [sys.executable, "-I", "-X", "faulthandler", "-m", "geak_core.kit.sandbox", str(result_fd)]
    tool = [part.replace(TOOL_OUT_MARK, os.path.join(workdir, TOOL_OUT))
            for part in (wrapper.command if wrapper is not None else ())]
    if not tool:
        command.append(f"--parent={os.getpid()}")
    if preload:
        command.append("--preload=" + ",".join(preload))
    if not tool:
        return command
    # The tool's parent is this process: a launcher asks for its death with the judge (as a
    # child does), then becomes the tool; the child, the tool's child, asks for it with the
    # tool's thread that started it, so it is started without ``--parent``.
    return [sys.executable, "-I", "-c", _LAUNCHER, str(os.getpid()), *tool, *command]


# Runs the tool of a wrapped child: dies with the judge (the parent-death signal outlives
# ``exec``), or at once if the judge is gone already; then ``exec``s the tool. Inline, so it
# needs nothing but Python.
_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(71)\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'cannot start the tool {sys.argv[2]!r}: {exc}\\n')\n"
    "    os._exit(127)\n"
)
TOOL_OUT = "tool-out"  # the folder, in a wrapped job's directory, that its tool writes to
TOOL_TMP = "tool-tmp"  # its temporary folder (``TMPDIR``), beside it
TOOL_OUT_MARK = "{out}"  # stands for that folder in a wrapper's command and variables
TOOL_OUT_VARIABLE = "GEAK_TOOL_OUT"  # names that folder to the child


@dataclass(frozen=True)
class Wrapper:
    """A tool that starts the child and watches it (a profiler): ``command`` is put before the
    child's own command (``("ncu", "--csv", ...)``; empty for a tool that lives in the child,
    which then starts as usual); ``env`` is added to the environment the tool and the child
    share (after the allow-list: the caller's own, trusted values). ``{out}`` in either
    stands for a folder inside the job's directory, the only place the confined child may
    write the tool's files to; the child finds it in ``GEAK_TOOL_OUT``, and the tool's
    ``TMPDIR`` is another folder there. When the job ends, the regular files of that folder
    (symbolic links are dropped: the child could plant one) are moved to ``out``, a folder
    of the caller's, before the job's directory is removed.

    The tool runs unconfined (it is the caller's, trusted) in the child's process group, so a
    timeout kills it with the child; it must pass the child its inherited file descriptors
    (the result channel) and stdin, and start it from a thread that lives as long as the
    child (the child dies with that thread, as it dies with the judge otherwise)."""

    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    out: str = ""

    def variables(self, workdir: str) -> dict[str, str]:
        folder, tmp = os.path.join(workdir, TOOL_OUT), os.path.join(workdir, TOOL_TMP)
        values = {name: value.replace(TOOL_OUT_MARK, folder) for name, value in self.env.items()}
        return {**values, TOOL_OUT_VARIABLE: folder, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp}


def collect_tool_output(workdir: str, out: str) -> None:
    """Move the regular files a wrapped job's tool wrote (``TOOL_OUT`` in ``workdir``) into
    ``out``, keeping their relative paths; links and other special files are left behind, and
    so is a file that cannot be moved (the reader then finds it missing)."""
    source = os.path.join(workdir, TOOL_OUT)
    for root, _, files in os.walk(source):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            target = os.path.join(out, os.path.relpath(path, source))
            try:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.move(path, target)
            except OSError:
                continue


# Created in a spare child's working directory once its preloads are imported.
READY_FILE = ".geak-ready"


@dataclass
class SpareChild:
    """A child started ahead of need: its interpreter is up and ``preload`` imported, and it
    waits for its job. Nothing of any job has reached it yet, so it is as fresh as a new
    child; what it saves is the start-up (for the judge: Python, torch and Triton, several
    seconds a candidate). Use it once with ``run_sandboxed(..., spare=...)`` or ``close`` it.
    """

    proc: subprocess.Popen[bytes]
    read_fd: int
    workdir: str
    isolate: bool
    limits: ChildLimits = field(default_factory=ChildLimits)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """Whether its start-up is done (``preload`` imported); it then only waits for a job."""
        return os.path.exists(os.path.join(self.workdir, READY_FILE))

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait until it is ready, has ended or ``timeout_s`` passed; whether it is ready."""
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if not self.alive() or time.monotonic() >= deadline:
                return self.ready()
            time.sleep(0.02)
        return True

    def pause(self) -> None:
        """Stop every process of its group (``SIGSTOP``): nothing of it runs until ``resume``."""
        _signal_group(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        _signal_group(self.proc.pid, signal.SIGCONT)

    def pin(self, cpus: Iterable[int] | None) -> int:
        return pin_group(self.proc.pid, cpus)

    def close(self) -> None:
        _kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        try:
            os.close(self.read_fd)
        except OSError:
            pass
        shutil.rmtree(self.workdir, ignore_errors=True)


def _child_env(env: Mapping[str, str | None] | None, base_env: Mapping[str, str] | None,
               workdir: str, env_allow: tuple[str, ...] = ()) -> dict[str, str]:
    child_env = child_environment(base_env if base_env is not None else os.environ, workdir, env_allow)
    for name, value in (env or {}).items():
        if value is None:
            child_env.pop(name, None)
        else:
            child_env[name] = value
    return child_env


PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux's value; the constant is in Python >= 3.10


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> int:
    """Ask Linux for a ``size``-byte buffer on the pipe ``fd`` (the default is 64 KiB): a
    child's outputs, often hundreds of megabytes, then cross in fewer, larger reads
    (``bench/pipe_throughput.py``: about twice as fast on an idle machine). Returns the
    size in effect (0 where the platform or the user's pipe quota says no; the pipe works
    as before)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return int(fcntl.fcntl(fd, _F_SETPIPE_SZ, size))
    except OSError:
        return 0


class _Spawner:
    """Starts every child from one thread that lives as long as this process: a child's
    parent-death signal fires when the *thread* that started it ends, so children started
    from short-lived threads (a pool's, a spare-starting one) would die with them."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, job: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="geak-spawner", daemon=True)
                self._thread.start()
        if threading.current_thread() is self._thread:
            return job()
        future: Future[Any] = Future()
        self._jobs.put((job, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)


_SPAWNER = _Spawner()


def _spawn(env: Mapping[str, str | None] | None, base_env: Mapping[str, str] | None, isolate: bool,
           preload: tuple[str, ...] = (), limits: ChildLimits | None = None,
           env_allow: tuple[str, ...] = (), wrapper: Wrapper | None = None) -> SpareChild:
    """Start a child (under ``wrapper``'s tool, if given) that waits for its job on stdin;
    raises OSError if it cannot start."""
    limits = limits or ChildLimits()
    workdir = tempfile.mkdtemp(prefix="geak-sbx-")
    child_env = _child_env(env, base_env, workdir, env_allow)
    if wrapper is not None:
        for folder in (TOOL_OUT, TOOL_TMP):
            os.mkdir(os.path.join(workdir, folder), 0o700)
        child_env.update(wrapper.variables(workdir))
    read_fd, write_fd = os.pipe()
    widen_pipe(read_fd)

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            _child_command(write_fd, preload, wrapper, workdir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=workdir, env=child_env, pass_fds=(write_fd,),
            start_new_session=True, close_fds=True,
        )

    try:
        proc = _SPAWNER.call(start)
    except OSError:
        os.close(read_fd)
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        os.close(write_fd)
    assert proc.stdin is not None
    try:
        _write_frame(proc.stdin.fileno(), {"isolate": isolate, "limits": limits.to_dict()})
    except OSError:
        pass  # it died already; its exit status tells why
    return SpareChild(proc, read_fd, workdir, isolate, limits)


def start_spare(env: Mapping[str, str | None] | None = None, *, preload: tuple[str, ...] = (),
                isolate: bool = False, base_env: Mapping[str, str] | None = None,
                limits: ChildLimits | None = None, env_allow: tuple[str, ...] = ()) -> SpareChild | None:
    """Start a child that imports ``preload`` and then waits for a job (None if it cannot start)."""
    try:
        return _spawn(env, base_env, isolate, preload, limits, env_allow)
    except OSError:
        return None


def job_confinement(confine: Confinement, workdir: str, sys_path: list[str]) -> Confinement:
    """``confine`` completed with what every job needs: its own directory writable; the user's
    home and the temporary folder hidden (other jobs' directories, the judge's files); the
    Python installation and the import path visible."""
    home = os.path.expanduser("~")
    hidden = [*confine.hidden, tempfile.gettempdir()] + ([home] if home not in ("", os.sep) else [])
    visible = [*confine.visible, workdir, sys.prefix, sys.base_prefix, sys.exec_prefix,
               os.path.dirname(sys.executable), os.path.realpath(sys.executable), *sys_path]
    return Confinement(writable=[workdir, *confine.writable], hidden=hidden, visible=visible,
                       network=confine.network)


def run_sandboxed(
    entry: str,
    args: Any,
    *,
    timeout_s: float,
    env: Mapping[str, str | None] | None = None,
    sys_path: list[str] | None = None,
    output_limit: int = 64 * 1024,
    result_limit: int = 4 * 1024**3,
    on_message: Callable[[Any, Replier], Any] | None = None,
    keep_dir: bool = False,
    base_env: Mapping[str, str] | None = None,
    isolate: bool = False,
    spare: SpareChild | None = None,
    job_env: Mapping[str, str] | None = None,
    limits: ChildLimits | None = None,
    confine: Confinement | None = None,
    env_allow: tuple[str, ...] = (),
    preload: tuple[str, ...] = (),
    wrapper: Wrapper | None = None,
) -> SandboxResult:
    """Run ``entry(args, channel)`` in a fresh, isolated child; never raises for child failures.

    ``env`` entries are applied to the allow-listed environment (a ``None`` value
    removes a variable; ``env_allow``: more names or shell patterns to let
    through). ``limits``: the child's resource limits. ``confine``: what the
    job may touch (:func:`job_confinement` adds its own directory, the Python
    installation and ``sys_path``; None: unconfined, for trusted code only).
    ``preload``: modules a child started here imports before it confines itself
    (trusted code: a GPU runtime's initialisation needs what a confined job may not
    touch). ``sys_path`` is the child's import path (the caller's by
    default, so the child imports what the caller can). ``on_message`` is
    called, in a reader thread, for each frame as it arrives; a non-None return
    value is kept in ``messages`` instead of the frame (so large frames can be
    digested as they come and dropped). ``result_limit``: the largest frame, and the
    most bytes of frames kept as read (not digested by ``on_message``), before the
    child is killed. ``spare``: a child from
    :func:`start_spare` to use instead of starting one (its ``env`` and
    ``isolate`` were fixed when it started); ``job_env``: variables the child
    sets before importing ``entry`` (what differs between jobs of one spare).
    The timeout starts now; a handler that makes the child wait can exclude that
    time with ``replier.exclude``. ``wrapper``: a tool that starts the child
    (:class:`Wrapper`); such a child is always started here, never a spare, and
    what the tool printed is in the result's ``stdout`` and ``stderr`` with the child's.
    """
    if wrapper is not None and spare is not None:
        raise ValueError("a wrapped child is started for its job: it cannot be a spare")
    path = [os.path.abspath(p) for p in (sys_path if sys_path is not None else sys.path)
            if p and os.path.isdir(p)]
    if _REFUSING.is_set():
        if spare is not None:
            spare.close()
        return SandboxResult(returncode=None, channel_error=STOPPED_NOTE)
    if spare is None or not spare.alive():
        if spare is not None:
            spare.close()
        try:
            spare = _spawn(env, base_env, isolate, preload, limits=limits, env_allow=env_allow,
                           wrapper=wrapper)
        except OSError as exc:
            return SandboxResult(returncode=None, channel_error=f"could not start the child: {exc}")
    proc, read_fd, workdir, isolate = spare.proc, spare.read_fd, spare.workdir, spare.isolate
    started = time.monotonic()
    with _RUNNING_LOCK:
        _RUNNING.add(proc.pid)
        if _REFUSING.is_set():  # stopped while this one started: it ends with the others
            _kill_group(proc.pid)

    result = SandboxResult(returncode=None, limits=spare.limits)
    out_buf, err_buf = _TailBuffer(output_limit), _TailBuffer(output_limit)
    outbox: queue.Queue[Any] = queue.Queue()
    replier = Replier(outbox, spare)
    request: dict[str, Any] = {"entry": entry, "sys_path": path, "args": args, "env": dict(job_env or {})}
    if confine is not None:
        request["confine"] = job_confinement(confine, workdir, path).to_dict()
    outbox.put(request)

    def write_loop() -> None:
        assert proc.stdin is not None
        fd = proc.stdin.fileno()
        try:
            while True:
                item = outbox.get()
                if item is _CLOSE:
                    break
                _write_frame(fd, item)
        except (OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def read_loop() -> None:
        kept = 0  # bytes of the frames kept as read (the judge's memory)
        try:
            while True:
                head = _read_exact(read_fd, _FRAME.size)
                if head is None:
                    break
                (size,) = _FRAME.unpack(head)
                if size > result_limit:
                    result.channel_error = f"a result frame of {size} bytes exceeded {result_limit} bytes"
                    _kill_group(proc.pid)
                    break
                body = _read_exact(read_fd, size)
                if body is None:
                    break
                try:
                    message = tensorio.loads(body)
                except tensorio.TensorIOError as exc:
                    result.channel_error = f"undecodable result frame: {exc}"
                    _kill_group(proc.pid)
                    break
                if isinstance(message, dict) and CONFINEMENT_ERROR in message:
                    result.channel_error = f"the child could not confine itself: {message[CONFINEMENT_ERROR]}"
                    break
                replacement = None
                if on_message is not None:
                    try:
                        replacement = on_message(message, replier)
                    except Exception:
                        result.channel_error = "judge failed handling a frame:\n" + traceback.format_exc()
                        _kill_group(proc.pid)
                        break
                if replacement is None or replacement is message:
                    # Kept as read: counted against the limit. A frame the handler digested
                    # (its replacement kept instead) is not: a long-lived child that sends
                    # many large outputs to be compared (a big task's cases, its timed
                    # outputs) is bounded per frame and by its deadline, not by their sum.
                    kept += size
                    if kept > result_limit:
                        result.channel_error = f"result exceeded {result_limit} bytes"
                        _kill_group(proc.pid)
                        break
                else:
                    message = replacement
                result.messages.append(message)
        except OSError:
            pass
        finally:
            os.close(read_fd)

    threads = [
        threading.Thread(target=write_loop, daemon=True),
        threading.Thread(target=read_loop, daemon=True),
        threading.Thread(target=_drain, args=(proc.stdout, out_buf), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err_buf), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        while True:
            budget = replier.limit_s if replier.limit_s is not None else timeout_s
            left = started + budget + replier.allowed_s + replier.excluded_now() - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, budget)
            try:
                proc.wait(timeout=min(left, 1.0))
                break
            except subprocess.TimeoutExpired:
                continue
    except subprocess.TimeoutExpired:
        result.timed_out = True
        result.budget_note = replier.budget_note()
        _kill_group(proc.pid)
        proc.wait()
    finally:
        result.wall_s = time.monotonic() - started
        result.waited_s = replier.excluded_s
        _kill_group(proc.pid)  # stragglers the child left behind
        with _RUNNING_LOCK:
            _RUNNING.discard(proc.pid)

        outbox.put(_CLOSE)
        for thread in threads:
            thread.join(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        if wrapper is not None and wrapper.out:
            collect_tool_output(workdir, wrapper.out)
        if not keep_dir:
            shutil.rmtree(workdir, ignore_errors=True)
    result.returncode = proc.returncode
    if isolate and result.returncode is not None and 128 < result.returncode < 128 + 65:
        result.returncode = -(result.returncode - 128)  # the namespace's init reports signals so
    result.stdout = out_buf.text()
    result.stderr = err_buf.text()
    return result


_RUNNING: set[int] = set()  # process groups of the jobs running now (run_sandboxed)
_RUNNING_LOCK = threading.Lock()


_REFUSING = threading.Event()  # stop_running_jobs(refuse_new=True) until accept_new_jobs()
STOPPED_NOTE = "not started: the judge was stopped (Ctrl-C)"


def stop_running_jobs(refuse_new: bool = False) -> int:
    """Kill the process group of every job running now (Ctrl-C: the judge's children run in
    groups of their own, which the terminal's SIGINT does not reach); each ``run_sandboxed``
    then returns at once with a killed child. Returns how many were killed. ``refuse_new``:
    also end every job started from now on at once (a verdict in flight would otherwise go
    on to its next child: a reference's timed runs, a baseline's timer) until
    ``accept_new_jobs``."""
    with _RUNNING_LOCK:
        if refuse_new:
            _REFUSING.set()
        groups = list(_RUNNING)
    for pid in groups:
        _kill_group(pid)
    return len(groups)


def accept_new_jobs() -> None:
    """Undo ``stop_running_jobs(refuse_new=True)``: jobs start again (a new batch)."""
    _REFUSING.clear()


def group_processes(pgid: int) -> list[int]:
    """The processes of group ``pgid`` as this process's ``/proc`` shows them (Linux; elsewhere
    the group's leader alone). A child in a PID namespace of its own is found too: its
    processes' group, read here, is numbered in this namespace."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [pgid]
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode():
            members.append(int(entry))
    return members


def pin_group(pgid: int, cpus: Iterable[int] | None) -> int:
    """Put every thread of every process of group ``pgid`` on the CPUs ``cpus`` (None: the
    CPUs this process may use, which a child inherits at its start); threads they start
    later inherit it. The number of threads moved; 0 where the platform has no CPU
    affinity. Threads that end meanwhile are passed over."""
    if not hasattr(os, "sched_setaffinity"):
        return 0
    wanted = set(cpus) if cpus is not None else os.sched_getaffinity(0)
    moved = 0
    for pid in group_processes(pgid):
        try:
            threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            threads = [pid]
        for tid in threads:
            try:
                os.sched_setaffinity(tid, wanted)
                moved += 1
            except OSError:
                continue
    return moved


def _kill_group(pid: int) -> None:
    _signal_group(pid, signal.SIGKILL)


def _signal_group(pid: int, number: int) -> None:
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------
# Child side
# ---------------------------------------------------------------------------


class Channel:
    """The child's end: ``send`` frames to the judge, ``receive`` its answers."""

    def __init__(self, result_fd: int, stdin_fd: int):
        self._result_fd = result_fd
        self._stdin_fd = stdin_fd
        self.sent_s = 0.0  # time spent encoding and writing frames (the judge reading them included)
        self.waited_s = 0.0  # time spent waiting for the judge's answers

    def send(self, obj: Any) -> None:
        began = time.perf_counter()
        try:
            _write_frame(self._result_fd, obj)
        finally:
            self.sent_s += time.perf_counter() - began

    def receive(self) -> Any:
        began = time.perf_counter()
        try:
            head = _read_exact(self._stdin_fd, _FRAME.size)
            if head is None:
                raise EOFError("the judge closed the channel")
            (size,) = _FRAME.unpack(head)
            body = _read_exact(self._stdin_fd, size)
            if body is None:
                raise EOFError("the judge closed the channel mid-frame")
        finally:
            self.waited_s += time.perf_counter() - began
        return tensorio.loads(body)


CONFINEMENT_ERROR = "$confinement_error"  # the first frame of a child that could not confine itself
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent(parent: int | None = None) -> None:
    """Ask for SIGKILL when the parent (thread) ends; if it has ended already, end now."""
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(71)


def _enter_namespaces(processes: int = 0) -> None:
    """Move the rest of this child into new user, PID, network and mount namespaces. The
    user namespace maps the child's own user (root stays root for the files it owns) but
    leaves it no capability outside: a judge running as root does not lend its children
    the machine. This process stays outside and only passes on how the rest ended; the
    first process inside is the namespace's init, which dies with this one (the kernel then
    ends everything inside); the job runs in the init's child. ``processes`` > 0 caps the
    namespace's process ids (``kernel.pid_max``, per PID namespace since Linux 6.14), so
    it holds at most about that many processes and threads, root or not. Returns in the
    job's process; raises OSError where the kernel refuses."""
    import ctypes
    import select

    libc = _libc()
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare: {os.strerror(errno)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    lifeline, keep = os.pipe()  # EOF on ``lifeline`` once this process has ended
    init = os.fork()
    if init:
        os.close(lifeline)
        while True:
            try:
                _, status = os.waitpid(init, 0)
                break
            except InterruptedError:
                continue
        os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    os.close(keep)
    _die_with_parent()
    if select.select([lifeline], [], [], 0)[0]:  # the outer process ended before the line above
        os._exit(71)
    os.close(lifeline)
    # Its own /proc: the processes of this namespace only (best effort: where the kernel
    # refuses, the PID namespace still keeps signals in, and Landlock keeps ptrace out).
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) == 0:
        libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    if processes > 0:
        limit_process_ids(processes)
    _stay_out_of_pid_one()


PID_MAX_FLOOR = 301  # the kernel keeps ids below 300 for itself once ids wrap


def limit_process_ids(processes: int) -> bool:
    """Cap this PID namespace's process ids (its init writes its own ``pid_max``); whether the
    kernel took it (Linux 6.14 and later)."""
    try:
        with open("/proc/sys/kernel/pid_max", "w") as handle:
            handle.write(str(max(PID_MAX_FLOOR, processes + 1)))
        return True
    except OSError:
        return False


def _stay_out_of_pid_one() -> None:
    """In a fresh PID namespace this process is PID 1, which the kernel shields from the
    signals it raises itself (a crash would not kill it). Fork: the job runs in a child,
    PID 1 reaps and reports how the job ended as 128 + signal or the exit status."""
    job = os.fork()
    if job == 0:
        return
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(70)
        if pid == job:
            if os.WIFSIGNALED(status):
                os._exit(128 + os.WTERMSIG(status))
            os._exit(os.WEXITSTATUS(status))


def _probe_namespaces() -> None:
    try:
        _enter_namespaces()
    except OSError:
        os._exit(1)
    os._exit(0 if os.getpid() == 2 else 1)


def _child_main() -> None:
    if sys.argv[1:] == ["--probe-namespaces"]:
        _probe_namespaces()
    options = dict(a[2:].partition("=")[::2] for a in sys.argv[2:] if a.startswith("--"))
    _die_with_parent(int(options["parent"]) if options.get("parent") else None)
    stdin_fd = sys.stdin.fileno()
    result_fd = int(sys.argv[1])
    channel = Channel(result_fd, stdin_fd)
    try:
        boot = channel.receive()
        from geak_core.kit.limits import ChildLimits, apply_rlimits

        limits = ChildLimits.from_dict(boot.get("limits"))
        apply_rlimits(limits)
        if boot.get("isolate"):
            _enter_namespaces(limits.processes)
        import importlib

        for name in filter(None, options.get("preload", "").split(",")):
            importlib.import_module(name)
        if "preload" in options:
            with open(READY_FILE, "w"):  # in its working directory: the parent sees it's ready
                pass
        request = channel.receive()
        channel.sent_s = channel.waited_s = 0.0  # the job's own time, not the wait for it
        os.environ.update(request.get("env") or {})
        for entry in reversed(request.get("sys_path", [])):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        if request.get("confine") is not None:
            from geak_core.kit.confinement import Confinement, ConfinementError, apply

            try:
                apply(Confinement.from_dict(request["confine"]))
            except ConfinementError as exc:
                channel.send({CONFINEMENT_ERROR: str(exc)})
                os._exit(72)
        module_name, _, function_name = request["entry"].partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        value = function(request.get("args"), channel)
        channel.send({"$return": value})
    except BaseException:
        sys.stderr.write(traceback.format_exc())
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(70)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    _child_main()
