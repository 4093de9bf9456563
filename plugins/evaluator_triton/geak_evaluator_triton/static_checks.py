"""Checks on the candidate's source, done in the judge without running anything.

``ast.parse`` never executes code, so these run in the judge's own process.
They catch what a runtime check would see too late or not at all: a syntax
error, an import of a Triton API this Triton does not have, a module without
any ``@triton.jit`` kernel, and constructs a kernel
module has no business using (process control, frame and code-object
introspection, the object graph, the judge's own packages), in whatever
spelling the rules can read: through an import alias, ``from m import name``,
``getattr``/``vars``/``__dict__`` with a written name, or a forbidden module
reached as an attribute of an allowed one (``torch.sys``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from geak_core.api.astutil import dotted_name, parse_source

FORBIDDEN_MODULES = {
    "ctypes": "raw memory access",
    "gc": "walking the heap (it reaches the judge's objects)",
    "subprocess": "starting processes",
    "multiprocessing": "starting processes",
    "concurrent": "background workers the timer cannot see",
    "threading": "background threads the timer cannot see",
    "_thread": "background threads the timer cannot see",
    "signal": "signal handlers",
    "socket": "network access",
    "pty": "starting processes",
    "importlib": "importing modules by path (the reference, the judge)",
    "runpy": "running other modules",
    "marshal": "loading code objects",
    "builtins": "replacing built-in functions",
    "geak_core": "the judge's own package",
}
FORBIDDEN_MODULE_PREFIXES = ("geak_",)
FORBIDDEN_ATTRIBUTES = {
    "_getframe": "frame introspection",
    "f_back": "frame introspection",
    "f_locals": "frame introspection",
    "f_globals": "frame introspection",
    "f_builtins": "frame introspection",
    "gi_frame": "frame introspection",
    "cr_frame": "frame introspection",
    "ag_frame": "frame introspection",
    "tb_frame": "frame introspection",
    "__code__": "swapping code objects",
    "__globals__": "reaching other modules' globals",
    "__closure__": "reaching other functions' state",
    "__builtins__": "replacing built-in functions",
    "__subclasses__": "reaching arbitrary classes",
    "co_filename": "disguising where code comes from",
    "settrace": "tracing the judge",
    "setprofile": "profiling the judge",
    "meta_path": "hooking imports",
    "path_hooks": "hooking imports",
    # the stack's frames, whose locals hold the judge's timing objects
    "currentframe": "frame introspection",
    "getouterframes": "frame introspection",
    "getinnerframes": "frame introspection",
    "getframeinfo": "frame introspection",
    "getargvalues": "frame introspection",
    "getgeneratorlocals": "frame introspection",
    "getcoroutinelocals": "frame introspection",
    "getasyncgenlocals": "frame introspection",
    "extract_stack": "frame introspection",
    "walk_stack": "frame introspection",
    "walk_tb": "frame introspection",
    "_current_frames": "frame introspection",
    # the object graph, which holds every object of the process
    "get_objects": "walking the object graph (it reaches the judge's objects)",
    "get_referrers": "walking the object graph (it reaches the judge's objects)",
    "get_referents": "walking the object graph (it reaches the judge's objects)",
    # modules by name, and attributes looked up by hand
    "import_module": "importing modules by name",
    "__import__": "importing modules by name",
    "__getattribute__": "looking attributes up by hand",
}
# Names too common to forbid everywhere, forbidden on the module they are looked up in.
FORBIDDEN_MODULE_ATTRIBUTES = {
    "inspect": {"stack": "frame introspection", "trace": "frame introspection",
                "getmembers": "reaching a namespace's members by name"},
    "traceback": {"format_stack": "frame introspection", "print_stack": "frame introspection",
                  "StackSummary": "frame introspection"},
    "sys": {"modules": "reaching other modules", "monitoring": "tracing the judge",
            "addaudithook": "watching the judge's calls"},
}
# Modules many allowed ones hold as attributes (``torch.sys``, ``os.sys``, ``np.sys``,
# ``triton.runtime.jit.inspect``, ``torch.cuda.traceback``, ``dataclasses.builtins``): reached
# that way, what the rules on their import and their members forbid would be open.
# (Not ``signal``: ``torch.signal`` is torch's own signal-processing package.)
MODULE_ATTRIBUTES = {
    **{name: why for name, why in FORBIDDEN_MODULES.items() if name not in ("geak_core", "signal")},
    "sys": "the interpreter's frames and module table",
    "inspect": "frame introspection",
    "traceback": "frame introspection",
    "os": "process control",
    "posix": "process control",
}
# Modules that, held as a value (``m = inspect``, ``f(sys)``), would hide the calls made on
# them from the rules above.
HELD_MODULES = frozenset({"sys", "inspect", "traceback"})
FORBIDDEN_OS_CALLS = {
    "system", "popen", "fork", "forkpty", "kill", "killpg", "setsid", "setpgid", "execv",
    "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnl", "spawnle",
    "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn",
    "posix_spawnp", "_exit",
}
FORBIDDEN_BUILTIN_CALLS = {"exec", "eval", "__import__", "breakpoint"}


@dataclass
class StaticFinding:
    stage: str  # "import" (syntax), "contract" (no kernel), "anticheat" (forbidden construct)
    reason: str
    line: int | None = None


def check_source(code: str, *, forbid_constructs: bool = True) -> StaticFinding | None:
    """The first problem found in ``code``, or None."""
    try:
        tree = parse(code)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return StaticFinding("import", f"syntax error at {where}: {exc.msg}", exc.lineno)
    except ValueError as exc:  # null bytes
        return StaticFinding("import", f"cannot parse the candidate: {exc}")
    # A removed Triton API first: the candidate's own import would stop there, before any
    # of its other constructs mattered (the published harnesses fail such code at import).
    finding = missing_triton_names(tree)
    if finding:
        return finding
    if forbid_constructs:
        finding = _forbidden(tree)
        if finding:
            return finding
    if not _defines_kernel(tree):
        return StaticFinding(
            "contract",
            "the candidate defines no Triton kernel (no function decorated with @triton.jit)",
        )
    return None




def parse(code: str) -> ast.Module:
    """``geak_core.api.astutil.parse_source`` (one parse at a time in this process)."""
    return parse_source(code)


def _decorator_name(node: ast.expr) -> str:
    return dotted_name(node.func if isinstance(node, ast.Call) else node)


def missing_triton_names(tree: ast.AST) -> StaticFinding | None:
    """An import of a Triton module or name this Triton does not have (an API removed or
    renamed since the code was written): the candidate would fail to import, and says
    so here, before anything runs. Only Triton's own modules are looked up, in the
    judge's process (trusted code; the children use the same installation)."""
    import importlib
    import importlib.util

    def module_exists(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False

    def load(name: str) -> object | None:
        try:
            return importlib.import_module(name)
        except Exception:
            return None

    version = getattr(load("triton"), "__version__", "?")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "triton" and not module_exists(alias.name):
                    return StaticFinding("import", f"line {node.lineno}: module {alias.name!r} does not exist "
                                         f"in Triton {version}", node.lineno)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] != "triton":
                continue
            if not module_exists(node.module):
                return StaticFinding("import", f"line {node.lineno}: module {node.module!r} does not exist "
                                     f"in Triton {version}", node.lineno)
            module = load(node.module)
            if module is None:
                continue  # it exists but does not import here: leave it to the child's import
            for alias in node.names:
                if alias.name == "*" or hasattr(module, alias.name):
                    continue
                if module_exists(f"{node.module}.{alias.name}"):
                    continue
                return StaticFinding("import", f"line {node.lineno}: cannot import {alias.name!r} from "
                                     f"{node.module!r}: Triton {version} has no such name (removed or "
                                     "renamed since the code was written)", node.lineno)
    return None


def _defines_kernel(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                name = _decorator_name(decorator)
                if name.split(".")[-1] == "jit":
                    return True
    return False


def _module_problem(name: str) -> str | None:
    root = name.split(".")[0]
    if root in FORBIDDEN_MODULES:
        return FORBIDDEN_MODULES[root]
    if root.startswith(FORBIDDEN_MODULE_PREFIXES):
        return "the judge's own packages"
    return None


# Modules whose attributes are looked up only by name: ``getattr(os, name)`` with a computed
# name, ``vars(sys)``, ``os.__dict__`` reach what the attribute rules below forbid.
GUARDED_NAMESPACES = frozenset({"os", "sys", "builtins", "importlib", "gc", "ctypes", "posix", "signal",
                                "inspect", "traceback"})
DYNAMIC_ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _aliases(tree: ast.AST) -> dict[str, str]:
    """What each name a module's imports bind stands for: ``import inspect as i`` binds ``i``
    to ``inspect``, ``import os.path`` binds ``os`` to ``os``, ``from torch import sys as s``
    binds ``s`` to ``torch.sys``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(node: ast.AST, aliases: dict[str, str]) -> str:
    """``dotted_name(node)`` with the name it starts at replaced by what the imports bound it
    to (``i.stack`` after ``import inspect as i`` is ``inspect.stack``); "" when it does not
    start at a name."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return ""
    dotted = dotted_name(node)
    head, _, rest = dotted.partition(".")
    head = aliases.get(head, head)
    return f"{head}.{rest}" if rest else head


def _attribute_problem(base: str, attr: str) -> str | None:
    """Why the attribute ``attr`` of ``base`` (a qualified name, or "" for an expression) is
    forbidden, or None: a name forbidden on any object, a module reached as another's
    attribute, a member forbidden on its own module, a process-control call of ``os``."""
    shown = f"{base}.{attr}" if base else f".{attr}"
    if attr in FORBIDDEN_ATTRIBUTES:
        return f"uses {shown} ({FORBIDDEN_ATTRIBUTES[attr]})"
    if attr in MODULE_ATTRIBUTES:
        return (f"reaches the module {attr} as {shown if base else 'an attribute'} ({MODULE_ATTRIBUTES[attr]}; "
                "a module reached as an attribute of another passes by the rules on its import)")
    if attr in FORBIDDEN_MODULE_ATTRIBUTES.get(base, {}):
        return f"uses {shown} ({FORBIDDEN_MODULE_ATTRIBUTES[base][attr]})"
    if attr in FORBIDDEN_OS_CALLS and base in ("os", "posix"):
        return f"calls {shown} (process control)"
    return None


def _import_by_name(node: ast.AST) -> str | None:
    """A module imported by a name written out (``__import__("inspect")``,
    ``importlib.import_module("gc")``, in any spelling of the call): which, and why not."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    called = dotted_name(node.func).split(".")[-1]
    if called not in ("__import__", "import_module"):
        return None
    module = node.args[0].value
    why = _module_problem(module) or MODULE_ATTRIBUTES.get(module.split(".")[0]) or "importing modules by name"
    return f"imports {module!r} by name through {called}() ({why})"


def _attribute_lookups_by_string(node: ast.AST) -> list[str]:
    """The attribute names ``operator.attrgetter("sys.modules")`` and
    ``operator.methodcaller("stack")`` look up, written out."""
    if not (isinstance(node, ast.Call) and dotted_name(node.func).split(".")[-1] in ("attrgetter", "methodcaller")):
        return []
    return [part for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            for part in arg.value.split(".")]


def _held_modules(tree: ast.AST, aliases: dict[str, str]) -> ast.Name | None:
    """A name bound to one of ``HELD_MODULES`` used other than to look up one of its members
    by a written name (``m = inspect``, ``f(sys)``), which would hide what is done with it."""
    looked_up: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            looked_up.add(id(node.value))
        spelled = _spelled_attribute(node)
        if spelled is not None and isinstance(spelled.value, ast.Name):
            looked_up.add(id(spelled.value))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"
                and node.args and isinstance(node.args[0], ast.Name)):
            looked_up.add(id(node.args[0]))  # vars(sys) itself is _namespace_reach's
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ATTRIBUTE_CALLS \
                and node.args and isinstance(node.args[0], ast.Name):
            looked_up.add(id(node.args[0]))  # a computed name is _namespace_reach's
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in looked_up \
                and aliases.get(node.id) in HELD_MODULES:
            return node
    return None


def _spelled_attribute(node: ast.AST) -> ast.Attribute | None:
    """``getattr(x, "name")``, ``vars(x)["name"]`` and ``x.__dict__["name"]`` as the attribute
    ``x.name`` they spell, so that the attribute rules apply to them too."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ATTRIBUTE_CALLS
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)):
        return ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load()), node)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        target = node.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "vars" \
                and target.args:
            return ast.copy_location(ast.Attribute(value=target.args[0], attr=node.slice.value, ctx=ast.Load()), node)
        if isinstance(target, ast.Attribute) and target.attr == "__dict__":
            return ast.copy_location(ast.Attribute(value=target.value, attr=node.slice.value, ctx=ast.Load()), node)
    return None


def _namespace_reach(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """A computed lookup in a guarded module's namespace (``getattr(os, name)``, ``vars(sys)``,
    ``os.__dict__``), or the built-ins looked up by name in any namespace."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        first = _qualified(node.args[0], aliases) if node.args else ""
        if name in DYNAMIC_ATTRIBUTE_CALLS and first in GUARDED_NAMESPACES and (
                len(node.args) < 2 or not isinstance(node.args[1], ast.Constant)):
            return f"calls {name}({first}, ...) with a computed name (reaching {first}'s members by name)"
        if name == "vars" and first in GUARDED_NAMESPACES:
            return f"calls vars({first}) (a namespace as a dict)"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and node.slice.value in ("__builtins__", "__import__", "__loader__", "__spec__"):
        return f"looks up {node.slice.value!r} by name (replacing built-in functions, importing by hand)"
    if isinstance(node, ast.Attribute) and node.attr == "__dict__" and _qualified(node.value, aliases) in GUARDED_NAMESPACES:
        return f"uses {_qualified(node.value, aliases)}.__dict__ (a namespace as a dict)"
    return None


def _forbidden(tree: ast.AST) -> StaticFinding | None:
    aliases = _aliases(tree)
    for found in ast.walk(tree):
        line = getattr(found, "lineno", None)
        why = _namespace_reach(found, aliases) or _import_by_name(found)
        if why:
            return _finding(why, line)
        for attr in _attribute_lookups_by_string(found):
            why = _attribute_problem("", attr)
            if why:
                return _finding(f"looks up {attr!r} by a written name: it {why}", line)
        node = _spelled_attribute(found) or found
        if isinstance(node, ast.Import):
            for alias in node.names:
                why = _module_problem(alias.name)
                if why:
                    return _finding(f"imports {alias.name!r} ({why})", line)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            why = _module_problem(node.module)
            if why:
                return _finding(f"imports from {node.module!r} ({why})", line)
            for alias in node.names:  # ``from sys import _getframe``: the attribute sys._getframe
                if alias.name == "*" and node.module.split(".")[0] in MODULE_ATTRIBUTES:
                    return _finding(f"imports * from {node.module!r} (its members unnamed, out of reach of "
                                    "the rules on them)", line)
                why = _attribute_problem(node.module, alias.name)
                if why:
                    return _finding(f"imports {alias.name!r} from {node.module!r}: it {why}", line)
        elif isinstance(node, ast.Attribute):
            why = _attribute_problem(_qualified(node.value, aliases), node.attr)
            if why:
                return _finding(why, line)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_BUILTIN_CALLS:
                return _finding(f"calls {node.func.id}() (running generated code)", line)
        elif isinstance(node, ast.Name) and node.id in ("__builtins__",):
            return _finding("uses __builtins__ (replacing built-in functions)", line)
    held = _held_modules(tree, aliases)
    if held is not None:
        module = aliases[held.id]
        return _finding(f"holds the module {module} as a value ({MODULE_ATTRIBUTES[module]}; calls made "
                        "through it would escape the rules on its members)", held.lineno)
    return None


def _finding(what: str, line: int | None) -> StaticFinding:
    where = f"line {line}: " if line else ""
    return StaticFinding("anticheat", f"forbidden construct at {where}the candidate {what}", line)
