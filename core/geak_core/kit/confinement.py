"""What a sandboxed child may touch: its files (Landlock), its network and its environment.

A child of the judge runs code nobody reviewed. Before that code runs, the child
confines itself with Landlock (Linux 5.13 and later; no privileges needed, root
included), which the kernel then enforces on it and on every process it starts:

* **writes** only to the directories its job names (its private working
  directory, its own compile cache) and to device files (the GPU, ``/dev/null``);
  the project tree, site-packages, the run store, the judge's caches and the
  user's home are read-only to it;
* **reads** of everything except the hidden trees (by default the user's home
  and the temporary folder, where other jobs and the judge keep their files),
  with the paths the job needs inside them (the Python installation, the import
  path, the task's files) made visible again;
* **no TCP** (Landlock ABI 4 and later; a network namespace, where the sandbox
  can make one, removes the rest of the network);
* **no signals and no abstract UNIX sockets** outside its own process tree
  (ABI 6 and later), and, whatever the ABI, no ``ptrace`` attach to processes
  outside it (``/proc/<judge>/mem`` is refused). Reading another process's
  ``/proc/<pid>/environ`` or listing its ``fd`` is not refused by Landlock
  (seen on Linux 6.18): the sandbox's PID namespace, where the kernel allows
  one, is what keeps the judge's process out of a child's sight.

Landlock cannot subtract from a grant, so "everything but the hidden trees" is
spelled out: every entry of each hidden tree's parent folders except the one
on the way down (:func:`read_roots`). Listing folders (``READ_DIR``) stays
allowed everywhere: names are not contents.

The environment is built from an allow-list (:func:`child_environment`): what
Python, the GPU runtimes, Triton and torch need, and nothing else, so no
credential of any name reaches the child.
"""

from __future__ import annotations

import ctypes
import fnmatch
import os
import platform
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# ---------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------

ENV_ALLOWED = (
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "CC", "CXX",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "LC_*", "CUDA_*", "NVIDIA_*", "CUBLAS_*", "CUDNN_*", "NCCL_*", "NVSHMEM_*",
    "HIP_*", "ROCR_*", "ROCM_*", "HSA_*", "AMD_*", "GPU_*",
    "TRITON_*", "TORCH_*", "PYTORCH_*",
)
# Dropped even when allowed: a name that says it holds a credential (a fragment anywhere in
# the name, or a whole word of it: ``PAT`` in ``GITHUB_PAT`` but not in ``PATH``).
SECRET_FRAGMENTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE", "WEBHOOK")
SECRET_WORDS = frozenset({"PWD", "PASS", "PAT", "AUTH", "SESSION", "SIGNATURE", "PRIVATE", "CERT"})


def looks_secret(name: str) -> bool:
    upper = name.upper()
    words = set(re.split(r"[^A-Z0-9]+", upper))
    return any(f in upper for f in SECRET_FRAGMENTS) or bool(words & SECRET_WORDS)


def env_allowed(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether variable ``name`` may reach a child: on the allow-list (or ``extra``, shell
    patterns), and not named like a credential."""
    patterns = (*ENV_ALLOWED, *extra)
    return any(fnmatch.fnmatchcase(name, p) for p in patterns) and not looks_secret(name)


def child_environment(base: Mapping[str, str], home: str, extra: Iterable[str] = ()) -> dict[str, str]:
    """The environment a child starts with: the allowed variables of ``base`` and a home of
    its own (``home``: its private directory), so tools that write under ``~`` write there."""
    extra = tuple(extra)
    env = {name: value for name, value in base.items() if env_allowed(name, extra)}
    env.update({
        "HOME": home, "TMPDIR": home, "TEMP": home, "TMP": home,
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "CUDA_CACHE_PATH": os.path.join(home, ".nv"),
        "TRITON_HOME": home,
    })
    return env


# ---------------------------------------------------------------------------
# Landlock
# ---------------------------------------------------------------------------

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FS_ABI1 = (1 << 13) - 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class ConfinementError(RuntimeError):
    """The child could not confine itself; its job must not run."""


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or not Linux)."""
    if platform.system() != "Linux":
        return 0
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def handled_fs(abi: int) -> int:
    rights = _FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights  # IOCTL_DEV (ABI 5) is left unhandled: GPU runtimes talk to devices by ioctl


@dataclass
class Confinement:
    """What one job may touch. ``writable``: folders it may change (all rights);
    ``hidden``: trees it may not read, except the ``visible`` paths inside them;
    ``network``: TCP allowed (off for judged code)."""

    writable: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    visible: list[str] = field(default_factory=list)
    network: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Confinement:
        return cls(**{k: list(v) if isinstance(v, (list, tuple)) else v for k, v in data.items()})


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def read_roots(hidden: Iterable[str], visible: Iterable[str]) -> list[str]:
    """Paths whose trees a child may read: everything under ``/`` except the ``hidden``
    trees, plus the ``visible`` paths inside those. Landlock grants but never subtracts, so
    each hidden tree's ancestors are opened up entry by entry, all but the way down."""
    hidden_real = sorted({_real(h) for h in hidden if h and os.path.exists(h)})
    hidden_real = [h for h in hidden_real if h != os.sep]
    # A hidden tree inside another hidden tree adds nothing.
    hidden_real = [h for h in hidden_real if not any(o != h and _beneath(h, o) for o in hidden_real)]
    visible_real = sorted({_real(v) for v in visible if v and os.path.exists(v)})
    roots: list[str] = []

    def walk(folder: str) -> None:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            return
        for entry in entries:
            path = os.path.join(folder, entry)
            if path in hidden_real:
                continue
            if any(_beneath(h, path) for h in hidden_real):
                if os.path.isdir(path) and not os.path.islink(path):
                    walk(path)
                continue
            roots.append(path)

    if not hidden_real:
        return [os.sep]
    walk(os.sep)
    for path in visible_real:
        if any(_beneath(path, h) for h in hidden_real):
            roots.append(path)
    return roots


DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
                "/dev/kfd")
DEVICE_FOLDERS = ("/dev/dri", "/dev/nvidia-caps")


def device_files() -> list[str]:
    """Character devices a GPU job writes to: the NVIDIA and AMD nodes, and the usual ones."""
    found = [p for p in DEVICE_FILES if os.path.exists(p)]
    try:
        found += [os.path.join("/dev", n) for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")
                  and not os.path.isdir(os.path.join("/dev", n))]
    except OSError:
        pass
    for folder in DEVICE_FOLDERS:
        if os.path.isdir(folder):
            found += [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
    return found


def _add_rule(ruleset: int, path: str, rights: int, handled: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISDIR(mode):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights & handled, fd)
        done = _libc().syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                               ctypes.byref(rule), ctypes.c_uint32(0))
        if done != 0:
            errno = ctypes.get_errno()
            raise ConfinementError(f"landlock_add_rule({path!r}) failed: {os.strerror(errno)}")
        return True
    finally:
        os.close(fd)


def apply(confinement: Confinement) -> dict[str, Any]:
    """Confine this process (and everything it starts) for good; what was applied.
    Raises ConfinementError where the kernel offers no Landlock or refuses the ruleset."""
    abi = landlock_abi()
    if abi < 1:
        raise ConfinementError("this kernel offers no Landlock (Linux 5.13 or later, with Landlock "
                               "among its security modules, is needed)")
    libc = _libc()
    handled = handled_fs(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4 and not confinement.network:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfinementError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    rules = 0
    try:
        rules += _add_rule(ruleset, os.sep, FS_READ_DIR, handled)
        for root in read_roots(confinement.hidden, confinement.visible):
            rules += _add_rule(ruleset, root, READ_RIGHTS, handled)
        for path in confinement.writable:
            if os.path.exists(path):
                rules += _add_rule(ruleset, path, handled, handled)
        for path in device_files():
            rules += _add_rule(ruleset, path, FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE, handled)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                      ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise ConfinementError(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise ConfinementError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return {"landlock": abi, "rules": rules, "network": bool(confinement.network or abi < 4),
            "signals_scoped": abi >= 6}


def describe_abi(abi: int) -> str:
    """One line for ``geak-core doctor``: what Landlock at this ABI keeps from a child."""
    if abi < 1:
        return "unavailable (no Landlock in this kernel): untrusted code is refused unless confinement = \"none\""
    parts = ["writes outside its own folders", "reads of hidden folders", "ptrace attach to other processes"]
    if abi >= 4:
        parts.append("TCP")
    if abi >= 6:
        parts.append("signals to other processes")
    return f"Landlock ABI {abi}: blocks " + ", ".join(parts)
