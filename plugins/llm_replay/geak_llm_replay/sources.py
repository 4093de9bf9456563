"""Reading recorded calls (run stores, JSONL exports) and reply scripts from disk."""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest

STORE_FILE = "store.sqlite"


@dataclass
class RecordedCall:
    """One successful call from a recorded run."""

    id: str
    request: ChatRequest
    response: dict[str, Any]  # ChatResponse.to_dict()
    identity: dict[str, Any]
    keys: set[str]  # the stored key and the key recomputed from request + identity
    meta: dict[str, Any]
    order: int


def identity_label(identity: dict[str, Any]) -> str:
    return json.dumps(identity, sort_keys=True)


def _loads(value: Any, where: str, what: str) -> Any:
    if value is None or isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise InputError(f"{where}: {what} is not valid JSON ({exc})") from exc


def _record(
    order: int, where: str, call_id: str, request: Any, response: Any, identity: Any, key: Any,
    meta: Any,
) -> RecordedCall:
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise InputError(f"{where}: 'request' must be an object with 'messages' (ChatRequest.to_dict())")
    if not isinstance(response, dict) or not isinstance(response.get("texts"), list):
        raise InputError(f"{where}: 'response' must be an object with 'texts' (ChatResponse.to_dict())")
    try:
        chat = ChatRequest.from_dict(request)
    except (TypeError, KeyError) as exc:
        raise InputError(f"{where}: 'request' is not a ChatRequest ({exc})") from exc
    ident = identity if isinstance(identity, dict) else {}
    keys = {chat.key(ident)}
    if isinstance(key, str) and key:
        keys.add(key)
    merged_meta = {**(chat.meta or {}), **(meta if isinstance(meta, dict) else {})}
    return RecordedCall(call_id, chat, response, ident, keys, merged_meta, order)


def load_store(path: Path) -> list[RecordedCall]:
    """Successful calls of a run store, in the order they were made."""
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot open the run store ({exc})") from exc
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute(
            "SELECT * FROM llm_calls WHERE response IS NOT NULL ORDER BY ts, rowid"
        ).fetchall()
    except sqlite3.Error as exc:
        raise InputError(f"{path}: not a run store with an llm_calls table ({exc})") from exc
    finally:
        db.close()
    calls = []
    for order, row in enumerate(rows):
        names = row.keys()
        where = f"{path} (llm_calls id {row['id']})"
        calls.append(_record(
            order, where, str(row["id"]),
            _loads(row["request"], where, "request"),
            _loads(row["response"], where, "response"),
            _loads(row["identity"], where, "identity") if "identity" in names else None,
            row["key"] if "key" in names else None,
            _loads(row["meta"], where, "meta") if "meta" in names else None,
        ))
    return calls


def load_jsonl(path: Path) -> list[RecordedCall]:
    """Lines of ``{"request": ..., "response": ..., "identity"?: ..., "key"?: ..., "meta"?: ...}``."""
    calls = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        data = _loads(line, where, "the line")
        if not isinstance(data, dict):
            raise InputError(f"{where}: each line must be a JSON object")
        if data.get("response") is None:
            continue  # a failed call
        calls.append(_record(
            len(calls), where, str(data.get("id") or f"line-{number}"), data.get("request"),
            data.get("response"), data.get("identity"), data.get("key"), data.get("meta"),
        ))
    return calls


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc


def load_recorded(source: str) -> tuple[Path, list[RecordedCall]]:
    """A run directory, a store file or a JSONL export."""
    path = Path(source).expanduser()
    if path.is_dir():
        store = path / STORE_FILE
        if not store.is_file():
            raise InputError(f"{path}: no {STORE_FILE} in this directory (is it a run directory?)")
        return store, load_store(store)
    if not path.is_file():
        raise InputError(f"replay source {source!r} does not exist")
    if path.suffix == ".jsonl":
        return path, load_jsonl(path)
    with path.open("rb") as handle:
        header = handle.read(16)
    if header.startswith(b"SQLite format 3"):
        return path, load_store(path)
    raise InputError(
        f"{path}: not a run directory, a run store (SQLite) or a .jsonl file of recorded calls"
    )


# ---------------------------------------------------------------------------
# Scripts
# ---------------------------------------------------------------------------

ENTRY_KEYS = {"match", "text", "texts", "file", "files", "usage", "finish_reason", "times", "tool_calls"}
CALL_KEYS = {"name", "arguments", "id"}


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call a script entry makes; ``id`` "" gets one made up for every reply."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class ScriptEntry:
    """One scripted reply: served to requests whose meta matches ``match``."""

    index: int
    where: str
    match: dict[str, Any]
    texts: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str = "stop"
    times: int | None = None  # how often it may be served (None: always)
    tool_calls: list[ScriptedCall] = field(default_factory=list)  # made in every reply it serves


def load_script(source: str) -> tuple[Path, list[ScriptEntry]]:
    path = Path(source).expanduser()
    if not path.is_file():
        raise InputError(f"reply script {source!r} does not exist")
    text = _read(path)
    raw: list[tuple[str, Any]] = []
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path}: invalid TOML ({exc})") from exc
        replies = data.get("reply")
        if not isinstance(replies, list):
            raise InputError(f"{path}: a script needs [[reply]] tables")
        raw = [(f"{path}: [[reply]] #{i + 1}", r) for i, r in enumerate(replies)]
    elif path.suffix == ".jsonl":
        raw = [
            (f"{path}:{n}", _loads(line, f"{path}:{n}", "the line"))
            for n, line in enumerate(text.splitlines(), start=1) if line.strip()
        ]
    elif path.suffix == ".json":
        data = _loads(text, str(path), "the script")
        replies = data.get("reply") if isinstance(data, dict) else data
        if not isinstance(replies, list):
            raise InputError(f"{path}: a JSON script is a list of entries or {{\"reply\": [...]}}")
        raw = [(f"{path}: entry #{i + 1}", r) for i, r in enumerate(replies)]
    else:
        raise InputError(f"{path}: a reply script is a .toml, .json or .jsonl file")
    entries = [_entry(i, where, value, path.parent) for i, (where, value) in enumerate(raw)]
    if not entries:
        raise InputError(f"{path}: the script has no replies")
    return path, entries


def _entry(index: int, where: str, value: Any, base: Path) -> ScriptEntry:
    if not isinstance(value, dict):
        raise InputError(f"{where}: an entry must be a table/object")
    unknown = sorted(set(value) - ENTRY_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (valid: {', '.join(sorted(ENTRY_KEYS))})")
    match = value.get("match", {})
    if not isinstance(match, dict):
        raise InputError(f"{where}: 'match' must be a table of meta fields")
    texts: list[str] = []
    if isinstance(value.get("text"), str):
        texts.append(value["text"])
    if isinstance(value.get("texts"), list):
        texts += [str(t) for t in value["texts"]]
    files = ([value["file"]] if isinstance(value.get("file"), str) else []) + [
        str(f) for f in value.get("files", []) or []
    ]
    for name in files:
        file = (base / name).resolve()
        if not file.is_file():
            raise InputError(f"{where}: file {name!r} not found (looked in {file})")
        texts.append(file.read_text(encoding="utf-8"))
    calls = _calls(where, value.get("tool_calls", []))
    if not texts and not calls:
        raise InputError(f"{where}: an entry needs 'text', 'texts', 'file', 'files' or 'tool_calls'")
    usage = value.get("usage", {})
    if not isinstance(usage, dict):
        raise InputError(f"{where}: 'usage' must be a table with prompt_tokens/completion_tokens")
    times = value.get("times")
    if times is not None and (not isinstance(times, int) or times < 1):
        raise InputError(f"{where}: 'times' must be a positive integer")
    reason = value.get("finish_reason", "tool_calls" if calls else "stop")
    return ScriptEntry(
        index, where, dict(match), texts or [""],
        {k: int(v) for k, v in usage.items()}, str(reason), times, calls,
    )


def _calls(where: str, value: Any) -> list[ScriptedCall]:
    """An entry's ``tool_calls``: tables of ``name``, ``arguments`` (a table) and ``id``."""
    if not isinstance(value, list):
        raise InputError(f"{where}: 'tool_calls' must be a list of tables with name and arguments")
    calls = []
    for k, call in enumerate(value):
        at = f"{where}: tool_calls[{k}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise InputError(f"{at}: a call is a table with a 'name' (and 'arguments', 'id')")
        unknown = sorted(set(call) - CALL_KEYS)
        if unknown:
            raise InputError(f"{at}: unknown key(s) {', '.join(unknown)} (valid: {', '.join(sorted(CALL_KEYS))})")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise InputError(f"{at}: 'arguments' must be a table")
        calls.append(ScriptedCall(call["name"], dict(arguments), str(call.get("id", ""))))
    return calls
