"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests that need a real wire.

It serves ``POST /v1/chat/completions`` from a script and records every
request, so a test can drive a backend (or the whole agent loop) without any
real LLM::

    from tests.support.openai_server import OpenAIServer, Reply

    with OpenAIServer(["first reply", ["sample a", "sample b"], Reply.error(429, "slow down")]) as srv:
        options = OpenAIOptions(model="m", base_url=srv.base_url)   # http://127.0.0.1:PORT/v1
        ...
        srv.requests[0].body["messages"]                            # what the client sent

The script is a list (one item per request, in order) or a callable that gets
the ``RecordedRequest`` and returns one item. An item is

* a ``str``: every one of the request's ``n`` choices has this text;
* a ``list[str]``: exactly these choices (fewer than ``n`` simulates a server
  that ignores ``n``);
* a ``Reply``: full control (status, headers, raw body, delay, usage);
  ``Reply.calling(Call("judge", {"code": "..."}), text="")`` is a reply that calls tools,
  in each server's own wire format (a ``Call`` whose ``arguments`` is a string sends that
  text as it is: malformed arguments).

A request arriving after the list is used up gets a 400 saying so. Usage
counts words: prompt tokens = words of all messages, completion tokens =
words of the choices, unless a ``Reply`` sets ``usage``. Server switches:
``max_n`` (a larger ``n`` gets a 400 naming ``n``), ``ignore_n`` (always one
choice), ``reject_params`` (400 "Unsupported parameter" for those request
fields), ``api_key`` (a missing or different ``Authorization: Bearer`` gets a
401). Tool calling is checked as the API checks it: ``tools`` must be function tools,
``tool_choice`` needs them, and every ``tool_calls`` of an assistant message must be answered
by the ``tool`` messages right after it, each naming its ``tool_call_id`` (a 400 otherwise).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union


@dataclass(frozen=True)
class Call:
    """A tool call a scripted reply makes. ``arguments`` as a string is sent as it is (the
    servers that send arguments as JSON text: OpenAI) or as a JSON string where an object
    belongs (Anthropic, Gemini); ``id`` None gets one made up (Gemini: none is sent);
    ``signature`` is Gemini's ``thoughtSignature`` on the call's part."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    signature: str | None = None

    def arguments_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """One scripted answer. ``texts`` None with status 200 and no body: use the request's n
    copies of ``text``. ``calls``: the tool calls every choice makes."""

    texts: list[str] | None = None
    status: int = 200
    json: Any = None  # an explicit JSON body (errors, odd shapes)
    body: bytes | None = None  # raw bytes (malformed replies)
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering (read timeouts)
    usage: dict[str, int] | None = None
    finish_reason: str | None = None  # default: the protocol's normal stop reason
    then: ScriptItem | None = None  # for stall(): what to send after the delay
    calls: list[Call] = field(default_factory=list)

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """An OpenAI-shaped error body: ``{"error": {"message", "type", "param", "code"}}``."""
        error = {"message": message, "type": type or "invalid_request_error", "param": param, "code": code}
        return cls(status=status, json={"error": error}, headers=dict(headers or {}))

    @classmethod
    def calling(cls, *calls: Call, text: str = "", usage: dict[str, int] | None = None) -> Reply:
        """A reply of one choice that says ``text`` and calls ``calls``."""
        return cls(texts=[text], calls=list(calls), usage=usage)

    @classmethod
    def raw(cls, body: str | bytes, *, status: int = 200, content_type: str = "text/plain") -> Reply:
        data = body.encode() if isinstance(body, str) else body
        return cls(status=status, body=data, content_type=content_type)

    @classmethod
    def stall(cls, seconds: float, then: Reply | str | list[str] = "") -> Reply:
        """Answer only after ``seconds`` (longer than the client's read timeout: a timeout)."""
        return cls(delay_s=seconds, then=then)


ScriptItem = Union[str, list[str], Reply]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any
    at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def n(self) -> int:
        return int(self.body.get("n", 1)) if isinstance(self.body, dict) else 1


def words(text: str) -> int:
    return len(text.split())


class ScriptedServer:
    """The threaded loopback server both protocol servers build on."""

    def __init__(self, replies: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None):
        self._script: Callable[[RecordedRequest], ScriptItem] | None = None
        self._queue: list[ScriptItem] = []
        if callable(replies):
            self._script = replies
        elif replies is not None:
            self._queue = list(replies)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._active = 0
        self.peak_concurrency = 0  # most requests handled at the same time
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                record = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(record)
                    server._active += 1
                    server.peak_concurrency = max(server.peak_concurrency, server._active)
                try:
                    status, headers, payload, delay = server.respond(record)
                    if delay:
                        time.sleep(delay)
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)
                finally:
                    with server._lock:
                        server._active -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def push(self, *items: ScriptItem) -> None:
        """Append replies to the script (list mode)."""
        with self._lock:
            self._queue.extend(items)

    # -- scripting ---------------------------------------------------------

    def next_item(self, record: RecordedRequest) -> ScriptItem | None:
        if self._script is not None:
            return self._script(record)
        with self._lock:
            return self._queue.pop(0) if self._queue else None

    def respond(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes, float]:
        raise NotImplementedError

    def refuse(self, reply: Reply) -> tuple[int, dict[str, str], bytes, float]:
        """A ``respond`` answer for a request the server turns down: ``reply`` at once."""
        return (*self.encode(reply, None), 0.0)

    @staticmethod
    def encode(reply: Reply, default_json: Any) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": reply.content_type, **reply.headers}
        if reply.body is not None:
            return reply.status, headers, reply.body
        body = reply.json if reply.json is not None else default_json
        return reply.status, headers, json.dumps(body).encode()


class OpenAIServer(ScriptedServer):
    """Serves ``/v1/chat/completions``; ``base_url`` is what the backend's ``base_url`` takes."""

    def __init__(
        self,
        replies: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        max_n: int | None = None,
        ignore_n: bool = False,
        reject_params: Iterable[str] = (),
        api_key: str | None = None,
    ) -> None:
        super().__init__(replies)
        self.max_n = max_n
        self.ignore_n = ignore_n
        self.reject_params = set(reject_params)
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def respond(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes, float]:
        if record.path.rstrip("/") != "/v1/chat/completions":
            return self.refuse(Reply.error(404, f"Unknown path {record.path}", code="not_found"))
        body = record.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return self.refuse(Reply.error(400, "request body must be a JSON object with messages"))
        if self.api_key is not None and record.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.refuse(Reply.error(401, "Incorrect API key provided.", code="invalid_api_key"))
        for name in sorted(self.reject_params):
            if name in body:
                return self.refuse(Reply.error(
                    400, f"Unsupported parameter: '{name}' is not supported with this model.",
                    param=name, code="unsupported_parameter",
                ))
        problem = tool_problem(body)
        if problem:
            return self.refuse(Reply.error(400, problem))
        n = record.n
        if self.max_n is not None and n > self.max_n:
            return self.refuse(Reply.error(400, f"n must be at most {self.max_n}, got {n}", param="n"))
        item = self.next_item(record)
        if item is None:
            return self.refuse(Reply.error(400, f"no scripted reply left for request #{len(self.requests)}"))
        reply = as_reply(item, n)
        delay = reply.delay_s
        if reply.then is not None:
            reply = as_reply(reply.then, n)
        if reply.status != 200 or reply.json is not None or reply.body is not None:
            return (*self.encode(reply, None), delay)
        texts = list(reply.texts if reply.texts is not None else [""] * n)
        if self.ignore_n:
            texts = texts[:1]
        prompt = sum(words(str(m.get("content") or "")) for m in record.messages)
        usage = reply.usage or {"prompt_tokens": prompt, "completion_tokens": sum(map(words, texts))}
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "")),
            "choices": [
                {
                    "index": i,
                    "message": self._message(text, reply.calls, i),
                    "finish_reason": reply.finish_reason or ("tool_calls" if reply.calls else "stop"),
                }
                for i, text in enumerate(texts)
            ],
            "usage": usage,
        }
        return (*self.encode(reply, payload), delay)


    def _message(self, text: str, calls: list[Call], choice: int) -> dict[str, Any]:
        if not calls:
            return {"role": "assistant", "content": text}
        return {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {"id": call.id or f"call_{len(self.requests)}_{choice}_{k}", "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments_text()}}
                for k, call in enumerate(calls)
            ],
        }


def tool_problem(body: dict[str, Any]) -> str:
    """What Chat Completions refuses in a request's tools and tool messages ("" when nothing)."""
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(
            isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str) for t in tools
        ):
            return "Invalid 'tools': each must be {'type': 'function', 'function': {'name': ...}}"
    if "tool_choice" in body and not tools:
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    pending: list[str] = []  # ids of the last assistant message's calls not yet answered
    for i, message in enumerate(body["messages"]):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (f"Invalid parameter: messages[{i}]: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'.")
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return unanswered(pending)
        if role == "assistant" and message.get("tool_calls"):
            pending = [str(c.get("id")) for c in message["tool_calls"] if isinstance(c, dict)]
    return unanswered(pending) if pending else ""


def unanswered(ids: list[str]) -> str:
    return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}")


def as_reply(item: ScriptItem, n: int) -> Reply:
    """A script item as a ``Reply`` (a ``str`` becomes ``n`` identical choices)."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(texts=[item] * n)
    if isinstance(item, list):
        return Reply(texts=[str(t) for t in item])
    raise TypeError(f"a scripted reply must be str, list[str] or Reply, got {type(item).__name__}")
