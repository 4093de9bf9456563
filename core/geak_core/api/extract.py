"""Finding the candidate code (and the strategy) in a model's reply.

Models answer in many shapes: GEAK's JSON ``{"strategy": ..., "code": ...}``
(bare or in a ```json fence, often with raw newlines or stray backslashes in
the strings), one or several fenced blocks (a kernel block and a wrapper
block, or an old and a revised version), prose around the code, a final fence
never closed because the reply was cut short, or code with no fence at all.
``extract_code`` reads all of them; a reply with no usable code gives None,
which the agent counts as a failed attempt.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from geak_core.api.astutil import parse_source

PYTHON_LANGS = frozenset({"", "python", "py", "python3", "py3", "triton", "pytorch", "torch"})
STRATEGY_KEYS = ("strategy", "plan", "reasoning", "explanation", "analysis")
_STRATEGY_LIMIT = 4000

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_CLASS = re.compile(r"^class[ \t]+(\w+)", re.MULTILINE)
_ASSIGN = re.compile(r"^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
_JIT = re.compile(r"^[ \t]*@[ \t]*(?:triton\.)?jit\b", re.MULTILINE)
_LAUNCH = re.compile(r"\b(\w+)[ \t]*\[[^\]\n]*\][ \t]*\(")
_CALL = re.compile(r"\b(\w+)[ \t]*\(")
_IMPORT_LINE = re.compile(r"^(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import[ \t])")
_CODE_START = re.compile(r"^(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import[ \t]|@[\w.]+|def[ \t]+\w+|class[ \t]+\w+)")
_STRATEGY_LABEL = re.compile(r"^[#>*_ \t]*(?:optimi[sz]ation[ \t]+)?strategy[*_ \t]*:?[*_ \t]*(?P<rest>.*)$", re.IGNORECASE)


@dataclass
class ExtractedCode:
    """The code to judge, the strategy the model described, and how they were found."""

    code: str
    strategy: str | None = None
    how: str = ""  # json | fence | fences-joined | unterminated-fence | bare


def extract_code(reply: str, required_names: Sequence[str] = ()) -> ExtractedCode | None:
    """The candidate code in ``reply``, preferring what defines ``required_names``."""
    text = _THINK.sub("", reply.replace("\r\n", "\n").replace("\r", "\n"))
    if not text.strip():
        return None
    names = [n for n in required_names if n]
    found = _from_json(text, names)
    if found is None:
        found = _from_fences(text, names)
    if found is None:
        found = _from_bare(text)
    return found


# ---------------------------------------------------------------------------
# Fenced blocks
# ---------------------------------------------------------------------------


@dataclass
class _Block:
    index: int
    lang: str
    code: str
    start: int  # first line of the fence (0-based)
    end: int  # line after the closing fence
    terminated: bool
    kernels: list[str] = field(default_factory=list)
    defines: set[str] = field(default_factory=set)
    launches: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.kernels = _kernels(self.code)
        self.defines = (
            set(_DEF.findall(self.code)) | set(_CLASS.findall(self.code)) | set(_ASSIGN.findall(self.code))
        )
        self.launches = set(_LAUNCH.findall(self.code))
        self.calls = set(_CALL.findall(self.code)) | self.launches

    @property
    def is_code(self) -> bool:
        return bool(self.kernels or _DEF.search(self.code) or _CLASS.search(self.code))

    @property
    def imports_only(self) -> bool:
        lines = [ln for ln in self.code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        return bool(lines) and all(_IMPORT_LINE.match(ln) for ln in lines)


def _kernels(code: str) -> list[str]:
    """Names of functions decorated with ``@triton.jit`` (through any stacked decorators)."""
    names = []
    for match in _JIT.finditer(code):
        after = _DEF.search(code, match.end())
        if after and after.group(1) not in names:
            names.append(after.group(1))
    return names


def _fenced_blocks(text: str) -> list[_Block]:
    lines = text.split("\n")
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group("fence")
        lang = (opening.group("info").split() or [""])[0].lower().strip("{}.")
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        terminated = False
        while j < len(lines):
            if closing.match(lines[j]):
                terminated = True
                break
            reopened = _FENCE_OPEN.match(lines[j])
            if reopened and reopened.group("info").strip() and lang in PYTHON_LANGS:
                break  # a new labelled fence: the previous block was never closed
            body.append(lines[j])
            j += 1
        blocks.append(_Block(len(blocks), lang, "\n".join(body).strip("\n"), i, j + 1 if terminated else j, terminated))
        i = j + 1 if terminated else j
    return blocks


def _safe_to_join(block: _Block) -> bool:
    """Only definitions and imports: no top-level statements that would run on import."""
    try:
        tree = parse_source(block.code)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Assign, ast.AnnAssign)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        if isinstance(node, ast.If) and "__name__" in ast.dump(node.test):
            continue
        return False
    return True


def _parses(code: str) -> bool:
    try:
        parse_source(code)
    except SyntaxError:
        return False
    return True


def _choose_blocks(blocks: list[_Block], names: Sequence[str]) -> list[_Block]:
    def rank(b: _Block) -> tuple[int, int, int, int, int]:
        covered = len(set(names) & b.defines)
        return (covered, len(b.kernels), int(_parses(b.code)), int(b.terminated), b.index)

    primary = max((b for b in blocks if b.is_code), key=rank)
    chosen = [primary]
    defined = set(primary.defines)

    def add(block: _Block) -> None:
        chosen.append(block)
        defined.update(block.defines)

    others = [b for b in reversed(blocks) if b is not primary]  # later versions first
    # Required names the primary lacks, from blocks that don't redefine what we have.
    for name in names:
        if name in defined:
            continue
        for b in others:
            if b not in chosen and name in b.defines and not (b.defines & defined - {name}):
                add(b)
                break
    # Kernels or helpers the chosen code uses but nobody chosen defines.
    for _ in range(len(blocks)):
        missing = set().union(*(b.calls for b in chosen)) - defined
        supplier = next(
            (b for b in others if b not in chosen and b.defines & missing and not (b.defines & defined)),
            None,
        )
        if supplier is None:
            break
        add(supplier)
    # A wrapper that launches a chosen kernel (when no required names say what is wanted).
    if not names:
        kernels = set().union(*(b.kernels for b in chosen))
        for b in others:
            if b not in chosen and b.launches & kernels and not (b.defines & defined) and _safe_to_join(b):
                add(b)
    # Imports the chosen code relies on, when they sit in a block of their own.
    joined = "\n".join(b.code for b in chosen)
    if not re.search(r"^\s*(?:import|from)\s+triton", joined, re.MULTILINE):
        for b in blocks:
            if b not in chosen and b.imports_only and "triton" in b.code:
                add(b)
                break
    return sorted(chosen, key=lambda b: b.index)


def _from_fences(text: str, names: Sequence[str]) -> ExtractedCode | None:
    blocks = _fenced_blocks(text)
    if not blocks:
        return None
    for block in reversed(blocks):  # a JSON answer inside a fence of another label
        if block.lang == "json" or block.code.lstrip().startswith("{"):
            found = _from_json(block.code, names)
            if found is not None:
                return found
    python_blocks = [b for b in blocks if b.lang in PYTHON_LANGS]
    if not any(b.is_code for b in python_blocks):
        return None
    chosen = _choose_blocks(python_blocks, names)
    code = "\n\n".join(_dedent(b.code) for b in chosen).strip("\n") + "\n"
    if len(chosen) > 1:
        how = "fences-joined"
    else:
        how = "fence" if chosen[0].terminated else "unterminated-fence"
    return ExtractedCode(code, _strategy_from_prose(text, blocks), how)


def _dedent(code: str) -> str:
    lines = code.split("\n")
    indents = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(ln[cut:] for ln in lines)


# ---------------------------------------------------------------------------
# Strategy text
# ---------------------------------------------------------------------------


def _strategy_from_prose(text: str, blocks: list[_Block]) -> str | None:
    lines = text.split("\n")
    inside: set[int] = set()
    for b in blocks:
        inside.update(range(b.start, b.end))
    prose_lines = [ln for i, ln in enumerate(lines) if i not in inside]
    return _strategy_from_lines(prose_lines)


def _strategy_from_lines(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        label = _STRATEGY_LABEL.match(line)
        if label and (label.group("rest").strip() or i + 1 < len(lines)):
            section = [label.group("rest").strip()]
            for following in lines[i + 1:]:
                if following.lstrip().startswith("#") and section != [""]:
                    break
                section.append(following)
            found = _tidy("\n".join(section))
            if found:
                return found
    return _tidy("\n".join(lines))


def _tidy(text: str) -> str | None:
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text[:_STRATEGY_LIMIT] if text else None


# ---------------------------------------------------------------------------
# JSON answers
# ---------------------------------------------------------------------------


def _json_objects(text: str) -> list[dict[str, object]]:
    """Objects with a string ``code`` field, parsed strictly, then leniently."""
    starts = [m.start() for m in re.finditer(r"^[ \t]*\{", text, re.MULTILINE)][:20]
    stripped = text.lstrip()
    if stripped.startswith("{") and (len(text) - len(stripped)) not in starts:
        starts.insert(0, len(text) - len(stripped))
    decoder = json.JSONDecoder(strict=False)
    found = []
    for start in starts:
        at = text.index("{", start)
        try:
            value, _ = decoder.raw_decode(text, at)
        except ValueError:
            value = _lenient_object(text[at:])
        if isinstance(value, dict) and isinstance(value.get("code"), str):
            found.append(value)
    return found


_KNOWN_KEYS = ("code", *STRATEGY_KEYS)


def _lenient_object(text: str) -> dict[str, object] | None:
    """String fields of a JSON-like object whose strings break JSON's rules (raw newlines,
    ``\\d`` and other invalid escapes, unescaped quotes inside the code)."""
    found = []
    for key in _KNOWN_KEYS:
        match = re.search(rf'(?:^\s*\{{|,)\s*"{key}"\s*:\s*"', text)
        if match:
            found.append((match.start(), match.end(), key))
    found.sort()
    if not any(key == "code" for _, _, key in found):
        return None
    out: dict[str, object] = {}
    for k, (_, begin, key) in enumerate(found):
        if k + 1 < len(found):
            region = text[begin:found[k + 1][0]].rstrip()
            value = region[:-1] if region.endswith('"') else region
        else:
            region = text[begin:]
            closings = list(re.finditer(r'"\s*\}', region))
            # Prefer a brace that ends the answer: before the end, a fence or a blank line.
            final = [c for c in closings if re.match(r"[ \t]*(?:\n[ \t]*(?:```|~~~|\n)|$)", region[c.end():])]
            if final or closings:
                value = region[:(final or closings)[0 if final else -1].start()]
            else:  # a reply cut short: keep what is there
                value = region.rstrip().rstrip("`").rstrip().rstrip('"')
        out[key] = _unescape(value)
    return out


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f"}
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.DOTALL)


def _unescape(raw: str) -> str:
    """JSON escapes decoded; invalid ones (``\\d`` in a regex) kept as written."""

    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return chr(int(m.group(1), 16))
        return _ESCAPES.get(m.group(2), m.group(0))

    return _ESCAPE.sub(one, raw)


def _from_json(text: str, names: Sequence[str]) -> ExtractedCode | None:
    objects = _json_objects(text)
    if not objects:
        return None

    def rank(obj: dict[str, object]) -> tuple[int, int]:
        code = str(obj["code"])
        return (len(set(names) & set(_DEF.findall(code))), len(_kernels(code)))

    best = max(reversed(objects), key=rank)  # ties: the first object
    code = str(best["code"])
    if "```" in code or "~~~" in code:  # code field that is itself a markdown answer
        inner = _from_fences(code, names)
        if inner is not None:
            code = inner.code
    code = code.strip("\n")
    if not code.strip() or not (_DEF.search(code) or _CLASS.search(code)):
        return None
    strategy = next(
        (str(best[k]).strip() for k in STRATEGY_KEYS if isinstance(best.get(k), str) and str(best[k]).strip()),
        None,
    )
    return ExtractedCode(code + "\n", strategy, "json")


# ---------------------------------------------------------------------------
# Code without fences
# ---------------------------------------------------------------------------


def _from_bare(text: str) -> ExtractedCode | None:
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if _CODE_START.match(ln)), None)
    if first is None:
        return None
    body = lines[first:]
    end = len(body)
    if not _parses("\n".join(body)):
        # Drop trailing prose: the longest prefix ending at an unindented line that parses.
        for cut in range(len(body) - 1, 0, -1):
            if body[cut].strip() and not body[cut][0].isspace() and _parses("\n".join(body[:cut])):
                end = cut
                break
    code = "\n".join(body[:end]).strip("\n")
    if not (_DEF.search(code) or _CLASS.search(code)):
        return None
    strategy = _strategy_from_lines(lines[:first] + body[end:])
    return ExtractedCode(code + "\n", strategy, "bare")
