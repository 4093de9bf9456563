"""The run store: ``runs/<run-id>/`` with the resolved recipe, a manifest and SQLite events.

The database is append-only and runs in WAL mode; each write is one
transaction, so a killed run leaves a consistent store. Resume, reports and
replay all read from here. Schema changes are numbered migrations.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sqlite3
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from geak_core.api.errors import InputError
from geak_core.api.model import Candidate, EvalResult, RunSummary, code_hash

STORE_FILE = "store.sqlite"
RECIPE_FILE = "recipe.toml"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"

MIGRATIONS: list[str] = [
    # 1: the initial schema
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts REAL NOT NULL,
        kind TEXT NOT NULL,
        task_id TEXT,
        lineage INTEGER,
        iteration INTEGER,
        payload TEXT NOT NULL
    );
    CREATE TABLE llm_calls (
        id TEXT PRIMARY KEY,
        ts REAL NOT NULL,
        key TEXT NOT NULL,
        call_key TEXT,
        backend TEXT NOT NULL,
        identity TEXT NOT NULL,
        request TEXT NOT NULL,
        response TEXT,
        error TEXT,
        latency_s REAL,
        prompt_tokens INTEGER DEFAULT 0,
        completion_tokens INTEGER DEFAULT 0,
        cost_usd REAL,
        meta TEXT
    );
    CREATE INDEX llm_calls_key ON llm_calls(key);
    CREATE INDEX llm_calls_call_key ON llm_calls(call_key);
    CREATE TABLE candidates (
        id TEXT PRIMARY KEY,
        ts REAL NOT NULL,
        task_id TEXT NOT NULL,
        lineage INTEGER,
        iteration INTEGER,
        origin TEXT,
        strategy TEXT,
        parent_id TEXT,
        llm_call_id TEXT,
        code_hash TEXT NOT NULL,
        code TEXT NOT NULL
    );
    CREATE TABLE evaluations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts REAL NOT NULL,
        candidate_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        call_ok INTEGER NOT NULL,
        correct INTEGER NOT NULL,
        speedup REAL,
        result TEXT NOT NULL
    );
    CREATE INDEX evaluations_candidate ON evaluations(candidate_id);
    CREATE INDEX evaluations_code ON evaluations(task_id, code_hash);
    """,
]


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system says it
    (``/proc/self/status``, Linux 4.7 on); elsewhere set and put back under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never half.

    Text is written as UTF-8, bytes as they are. The data goes to a temporary file beside
    ``path`` (a unique name, so concurrent writers never share one), is flushed to disk
    (``fsync=False`` skips that, for files rewritten often whose loss on a power cut does
    not matter) and renamed over ``path``; parent folders are created. The file gets the
    mode a plain ``open`` would give it: an existing file's, else 0666 less the umask (the
    temporary file is made 0600, and a report or export is meant to be shared as others are).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


CACHE_ENV = "GEAK_CACHE_DIR"


def cache_dir(name: str) -> Path:
    """A cache folder of geak-core's: ``$GEAK_CACHE_DIR/<name>``, else under
    ``$XDG_CACHE_HOME/geak-core`` or ``~/.cache/geak-core`` (suites keep the references they
    write from users' data there)."""
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "geak-core"
    )
    return Path(base) / name


def new_run_id(name: str) -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "run"
    return f"{stamp}-{safe}-{uuid.uuid4().hex[:6]}"


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent,
        )
        return out.stdout.strip() or None
    except Exception:
        return None


def environment_manifest(plugin_versions: dict[str, str] | None = None) -> dict[str, Any]:
    """Python, torch, triton, GPU (or "cpu-interpreter"), plugins, git revision. Versions are
    read from the installed distributions, and torch is imported only where a GPU may be
    there to name (``no_gpu_here``): its import is seconds that a run's start need not wait
    for on a CPU."""
    from importlib.metadata import PackageNotFoundError, version

    from geak_core.engine.hardware import no_gpu_here

    manifest: dict[str, Any] = {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "plugins": plugin_versions or {},
        "git_revision": _git_revision(),
        "gpu": "cpu-interpreter",
    }
    for name in ("torch", "triton"):
        try:
            manifest[name] = version(name)
        except PackageNotFoundError as exc:
            manifest[name] = f"unavailable: {exc}"
    if no_gpu_here() or os.environ.get("TRITON_INTERPRET") == "1":
        return manifest
    try:
        import torch

        if torch.cuda.is_available():
            manifest["gpu"] = torch.cuda.get_device_name(0)
            manifest["gpu_count"] = torch.cuda.device_count()
            manifest["driver"] = torch.version.hip or torch.version.cuda
    except Exception as exc:
        manifest["torch"] = f"unavailable: {exc}"
    return manifest


class RunStore:
    """One run's folder and database. Safe to use from several threads."""

    def __init__(self, run_dir: str | os.PathLike[str], *, create: bool = False):
        self.dir = Path(run_dir)
        self.run_id = self.dir.name
        db = self.dir / STORE_FILE
        if not create and not db.exists():
            raise InputError(f"no run store at {self.dir} (expected {db})")
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(db, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    # -- schema -------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.execute("BEGIN")
                try:
                    for statement in script.split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- files --------------------------------------------------------------

    @classmethod
    def create(
        cls, output_dir: str | os.PathLike[str], name: str, recipe_toml: str, manifest: dict[str, Any]
    ) -> RunStore:
        run_dir = Path(output_dir) / new_run_id(name)
        store = cls(run_dir, create=True)
        atomic_write(run_dir / RECIPE_FILE, recipe_toml)
        atomic_write(run_dir / MANIFEST_FILE, json.dumps(manifest, indent=2, default=str))
        store.set_meta("status", "created")
        store.set_meta("name", name)
        return store

    def write_json(self, relative: str, data: Any) -> Path:
        target = self.dir / relative
        atomic_write(target, json.dumps(data, indent=2, default=str))
        return target

    def write_text(self, relative: str, text: str) -> Path:
        target = self.dir / relative
        atomic_write(target, text)
        return target

    # -- writes -------------------------------------------------------------

    def _insert(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._db.execute(sql, params)

    def set_meta(self, key: str, value: Any) -> None:
        self._insert(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, json.dumps(value, default=str)),
        )

    def meta(self, key: str, default: Any = None) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def event(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        task_id: str | None = None,
        lineage: int | None = None,
        iteration: int | None = None,
    ) -> None:
        text = json.dumps(payload or {}, default=str)
        if lineage is not None and iteration is not None:
            # A round's event (a retrieval, a restart) is recorded once: a resumed run replays
            # its recorded rounds and would record them again.
            self._insert(
                "INSERT INTO events(ts, kind, task_id, lineage, iteration, payload) SELECT ?,?,?,?,?,?"
                " WHERE NOT EXISTS (SELECT 1 FROM events WHERE kind=? AND task_id IS ? AND lineage=?"
                " AND iteration=? AND payload=?)",
                (time.time(), kind, task_id, lineage, iteration, text, kind, task_id, lineage, iteration, text),
            )
            return
        self._insert(
            "INSERT INTO events(ts, kind, task_id, lineage, iteration, payload) VALUES(?,?,?,?,?,?)",
            (time.time(), kind, task_id, lineage, iteration, text),
        )

    def record_llm_call(
        self,
        *,
        call_id: str,
        key: str,
        call_key: str | None,
        backend: str,
        identity: dict[str, Any],
        request: dict[str, Any],
        response: dict[str, Any] | None,
        error: str | None,
        latency_s: float,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self._insert(
            "INSERT INTO llm_calls(id, ts, key, call_key, backend, identity, request, response, error,"
            " latency_s, prompt_tokens, completion_tokens, cost_usd, meta)"
            " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                call_id, time.time(), key, call_key, backend,
                json.dumps(identity, sort_keys=True), json.dumps(request, default=str),
                json.dumps(response, default=str) if response is not None else None, error,
                latency_s, prompt_tokens, completion_tokens, cost_usd,
                json.dumps(meta or {}, default=str),
            ),
        )

    def record_candidate(self, candidate: Candidate) -> None:
        self._insert(
            "INSERT OR IGNORE INTO candidates(id, ts, task_id, lineage, iteration, origin, strategy,"
            " parent_id, llm_call_id, code_hash, code) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
            (
                candidate.id, time.time(), candidate.task_id, candidate.lineage, candidate.iteration,
                candidate.origin, candidate.strategy, candidate.parent_id, candidate.llm_call_id,
                candidate.hash, candidate.code,
            ),
        )

    def record_evaluation(self, candidate: Candidate, result: EvalResult) -> None:
        """The candidate's verdict. The same verdict of the same candidate (id, code, result)
        is kept once: a resumed run replays its recorded rounds and their verdicts. Another
        verdict of the candidate is added (readers take the latest)."""
        text = json.dumps(result.to_dict(), default=str)
        self._insert(
            "INSERT INTO evaluations(ts, candidate_id, task_id, code_hash, call_ok, correct, speedup, result)"
            " SELECT ?,?,?,?,?,?,?,? WHERE NOT EXISTS"
            " (SELECT 1 FROM evaluations WHERE candidate_id=? AND code_hash=? AND result=?)",
            (
                time.time(), candidate.id, candidate.task_id, candidate.hash, int(result.call_ok),
                int(result.correct), result.speedup, text, candidate.id, candidate.hash, text,
            ),
        )

    # -- reads --------------------------------------------------------------

    def find_llm_call(self, call_key: str) -> dict[str, Any] | None:
        """The successful recorded call with this call key, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, response FROM llm_calls WHERE call_key=? AND response IS NOT NULL"
                " ORDER BY ts LIMIT 1",
                (call_key,),
            ).fetchone()
        if row is None:
            return None
        return {"id": row[0], "response": json.loads(row[1])}

    def find_llm_call_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, response FROM llm_calls WHERE key=? AND response IS NOT NULL ORDER BY ts LIMIT 1",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return {"id": row[0], "response": json.loads(row[1])}

    def llm_calls(self) -> list[dict[str, Any]]:
        """Every recorded call in the order it was made: id, key, request, response (None for
        a failed call), error and meta."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, key, request, response, error, meta FROM llm_calls ORDER BY ts, rowid"
            ).fetchall()
        return [
            {"id": r[0], "key": r[1], "request": json.loads(r[2]),
             "response": json.loads(r[3]) if r[3] is not None else None, "error": r[4],
             "meta": json.loads(r[5] or "{}")}
            for r in rows
        ]

    def find_evaluation(self, task_id: str, code: str) -> EvalResult | None:
        with self._lock:
            row = self._db.execute(
                "SELECT result FROM evaluations WHERE task_id=? AND code_hash=? ORDER BY id DESC LIMIT 1",
                (task_id, code_hash(code)),
            ).fetchone()
        return EvalResult.from_dict(json.loads(row[0])) if row else None

    def candidates(self, task_id: str | None = None) -> list[Candidate]:
        sql = "SELECT id, task_id, code, lineage, iteration, origin, strategy, parent_id, llm_call_id FROM candidates"
        params: tuple[Any, ...] = ()
        if task_id is not None:
            sql += " WHERE task_id=?"
            params = (task_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY ts", params).fetchall()
        return [
            Candidate(id=r[0], task_id=r[1], code=r[2], lineage=r[3], iteration=r[4], origin=r[5],
                      strategy=r[6] or "", parent_id=r[7], llm_call_id=r[8])
            for r in rows
        ]

    def evaluations(self, task_id: str | None = None) -> list[tuple[str, EvalResult]]:
        sql = "SELECT candidate_id, result FROM evaluations"
        params: tuple[Any, ...] = ()
        if task_id is not None:
            sql += " WHERE task_id=?"
            params = (task_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", params).fetchall()
        return [(r[0], EvalResult.from_dict(json.loads(r[1]))) for r in rows]

    def iter_events(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        sql = "SELECT id, ts, kind, task_id, lineage, iteration, payload FROM events"
        params: tuple[Any, ...] = ()
        if kind is not None:
            sql += " WHERE kind=?"
            params = (kind,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", params).fetchall()
        for r in rows:
            yield {"id": r[0], "ts": r[1], "kind": r[2], "task_id": r[3], "lineage": r[4],
                   "iteration": r[5], "payload": json.loads(r[6])}

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                table: self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("llm_calls", "candidates", "evaluations", "events")
            }

    def finished(self) -> bool:
        """Whether the run finished: status ``finished``, its summary written and its
        ``run_finished`` event recorded (a resume has nothing left to do)."""
        if self.meta("status") != "finished" or not (self.dir / SUMMARY_FILE).exists():
            return False
        with self._lock:
            rows = self._db.execute("SELECT payload FROM events WHERE kind='run_finished'").fetchall()
        return any(json.loads(r[0]).get("status") == "finished" for r in rows)

    def usage(self) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0),"
                " SUM(cost_usd) FROM llm_calls WHERE response IS NOT NULL"
            ).fetchone()
        return {"calls": row[0], "prompt_tokens": row[1], "completion_tokens": row[2], "cost_usd": row[3]}


def owner_record() -> dict[str, Any]:
    """Who is running a run now: this process (pid, host, and its start time where /proc
    tells it, so that a pid reused by another process is not taken for the owner)."""
    return {"pid": os.getpid(), "host": platform.node(), "pid_started": _process_started(os.getpid())}


def _process_started(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), or None."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[19])  # field 22 of stat: after the name, the 20th
    except (OSError, IndexError, ValueError):
        return None


def _owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the recorded owner process still runs (None: another host, cannot tell)."""
    if owner.get("host") != platform.node():
        return None
    pid = int(owner.get("pid") or 0)
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, another user's
    started = owner.get("pid_started")
    now = _process_started(pid)
    return started is None or now is None or started == now


LOCK_FILE = "run.lock"  # held with flock(2) while a process runs the run
HOLDER_FILE = "run.lock.json"  # who holds it: host, pid, started (for the message, and where flock fails)


class RunLocked(InputError):
    """Another process is running (or resuming) the run."""


class RunLock:
    """One process at a time runs a run (a fresh run or a resume): an exclusive ``flock`` on
    ``run.lock`` in its folder, with ``run.lock.json`` naming the holder (host, pid, started).

    The kernel drops a flock when its process dies, so a crashed run never blocks its resume.
    Where flock is refused (some network file systems) the holder record alone decides,
    created with ``O_EXCL``. Either way a record left by a dead process on this host is taken
    over; one of a live process, or of another host (whose processes this host cannot see),
    refuses the lock with a ``RunLocked`` (exit 2) naming the run, the holder's host and pid.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(run_dir)
        self.lock_path = self.dir / LOCK_FILE
        self.holder_path = self.dir / HOLDER_FILE
        self._fd: int | None = None
        self._record: dict[str, Any] | None = None

    def acquire(self) -> RunLock:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._flock(fd)
            self._claim_record()
        except BaseException:
            os.close(fd)  # drops the flock too
            raise
        self._fd = fd
        return self

    def _flock(self, fd: int) -> None:
        try:
            import fcntl
        except ImportError:  # no flock here: the holder record alone decides
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held by a live process (the kernel frees a dead one's)
            holder = self._read_holder()
            for _ in range(20):  # it may be writing its record this moment
                if holder is not None:
                    break
                time.sleep(0.1)
                holder = self._read_holder()
            raise self._refusal(holder) from None
        except OSError:  # ENOLCK, EOPNOTSUPP...: flock does not work on this file system
            return

    def _read_holder(self) -> dict[str, Any] | None:
        try:
            record = json.loads(self.holder_path.read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _claim_record(self) -> None:
        record = {**owner_record(), "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        text = json.dumps(record, indent=2).encode()
        for _ in range(3):
            try:
                fd = os.open(self.holder_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._read_holder()
                if holder is not None and _owner_alive(holder) is not False:
                    raise self._refusal(holder) from None
                self.holder_path.unlink(missing_ok=True)  # left by a dead process here: taken over
                continue
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            self._record = record
            return
        raise self._refusal(self._read_holder())

    def _refusal(self, holder: dict[str, Any] | None) -> RunLocked:
        run = self.dir.name
        if holder is None:
            return RunLocked(f"run {run} is being run by another process (it holds {self.lock_path}); "
                             "wait for it to finish, or stop it, then resume")
        host, pid = holder.get("host", "?"), holder.get("pid", "?")
        since = f" since {holder['started']}" if holder.get("started") else ""
        if host != platform.node():
            hint = (f"stop it there; if it is no longer running (its machine went away), "
                    f"remove {self.holder_path} and resume")
        else:
            hint = f"wait for it to finish, or stop it (kill {pid}), then resume"
        return RunLocked(f"run {run} is being run by process {pid} on host {host}{since}; {hint}")

    def release(self) -> None:
        """Gives the run back (the holder record first, then the flock); idempotent."""
        if self._fd is None:
            return
        try:
            if self._record is not None and self._read_holder() == self._record:
                self.holder_path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None
            self._record = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


HEARTBEAT_S = 30.0  # how often a running run records that it is alive
STALE_AFTER_S = 300.0  # a run on another host silent this long is taken as interrupted


class Heartbeat:
    """Records ``heartbeat`` (the time) in a run's meta every ``every_s`` while the run goes
    on, so that a reader on another host, where the owner's pid means nothing, can still tell
    a running run from one whose machine went away (``run_status``)."""

    def __init__(self, store: RunStore, every_s: float = HEARTBEAT_S) -> None:
        self.store = store
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        self.store.set_meta("heartbeat", time.time())
        self._thread = threading.Thread(target=self._beat, name="geak-heartbeat", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.store.set_meta("heartbeat", time.time())
            except sqlite3.Error:
                return  # the store was closed under us: the run is ending

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def run_status(store: RunStore, now: float | None = None) -> str:
    """The stored status, except that a run marked running whose process is gone (killed,
    crashed, its machine rebooted) is ``interrupted``: on this host by its owner's pid, on
    another by a heartbeat older than ``STALE_AFTER_S``."""
    status = str(store.meta("status", "?"))
    if status == "running":
        owner = store.meta("owner")
        alive = _owner_alive(owner) if isinstance(owner, dict) else None
        if alive is False:
            return "interrupted"
        if alive is None:
            beat = store.meta("heartbeat")
            if isinstance(beat, (int, float)) and (now if now is not None else time.time()) - beat > STALE_AFTER_S:
                return "interrupted"
    return status


def list_runs(output_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One row per run folder: id, name, status, counts, created time."""
    rows = []
    base = Path(output_dir)
    if not base.is_dir():
        return rows
    for run_dir in sorted(base.iterdir()):
        if not (run_dir / STORE_FILE).exists():
            continue
        try:
            with RunStore(run_dir) as store:
                rows.append({
                    "run_id": run_dir.name,
                    "name": store.meta("name", ""),
                    "status": run_status(store),
                    **store.counts(),
                })
        except sqlite3.DatabaseError as exc:
            rows.append({"run_id": run_dir.name, "status": f"unreadable: {exc}"})
    return rows


def run_details(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``runs show --json`` prints of the run in ``run_dir``: its id, folder, status, the
    reason it failed, its counts and LLM usage, and its summary (``summary.json``; None while
    it runs or when it stopped early). The judge's ``runs_show`` tool answers with it too."""
    base = Path(run_dir)
    with RunStore(base) as store:
        status = run_status(store)
        failure = store.meta("failure")
        counts = store.counts()
        usage = store.usage()
    summary_path = base / SUMMARY_FILE
    summary = (RunSummary.from_dict(json.loads(summary_path.read_text())).to_dict()
               if summary_path.exists() else None)
    return {"run_id": base.name, "dir": str(base), "status": status, "failure": failure,
            "counts": counts, "usage": usage, "summary": summary}


def stored_status(run_dir: str | os.PathLike[str]) -> str:
    """``run_status`` of the run in ``run_dir``; ``unreadable: ...`` for a store SQLite
    cannot read."""
    try:
        with RunStore(run_dir) as store:
            return run_status(store)
    except sqlite3.DatabaseError as exc:
        return f"unreadable: {exc}"


def last_written(run_dir: str | os.PathLike[str]) -> float:
    """When the run in ``run_dir`` was last written (its store and the store's log; its
    summary): the newest modification time, in seconds since the epoch."""
    base = Path(run_dir)
    times = [path.stat().st_mtime for path in (base / STORE_FILE, base / f"{STORE_FILE}-wal", base / SUMMARY_FILE)
             if path.exists()]
    return max(times, default=base.stat().st_mtime)


def remove_run(run_dir: str | os.PathLike[str]) -> None:
    """Delete the run folder ``run_dir`` with everything in it; refused (``InputError``) while
    another process runs it, as far as ``run_status`` can tell (its owner's pid on this host,
    its heartbeat on another)."""
    import shutil

    base = Path(run_dir)
    if not (base / STORE_FILE).exists():
        raise InputError(f"{base} is no run folder (it has no {STORE_FILE})")
    status = stored_status(base)
    if status == "running":
        raise InputError(f"run {base.name} is running; stop it first (or wait for it to end)")
    shutil.rmtree(base)


def resolve_run(ref: str, output_dir: str | os.PathLike[str]) -> Path:
    """A run folder from a path, a run id, or a unique prefix of one."""
    path = Path(ref)
    if (path / STORE_FILE).exists():
        return path
    base = Path(output_dir)
    if (base / ref / STORE_FILE).exists():
        return base / ref
    matches = [p for p in base.glob(f"{ref}*") if (p / STORE_FILE).exists()] if base.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(f"run {ref!r} is ambiguous: " + ", ".join(p.name for p in matches))
    raise InputError(f"no run {ref!r} under {base} (see `geak-core runs list`)")
