"""A scriptable Gemini ``generateContent`` server on 127.0.0.1, for tests.

Same script format as ``openai_server`` (a list or a callable; items are a
``str``, a ``list[str]`` or a ``Reply``), served at
``POST /v1beta/models/{model}:generateContent``::

    from tests.support.gemini_server import GeminiServer, gemini_error

    with GeminiServer(["a reply"], api_key="k") as srv:
        options = GeminiOptions(model="gemini-test", base_url=srv.base_url, api_key_env="MY_KEY")

Usage counts words, as in ``openai_server``. Switches: ``max_candidates``
(a larger ``candidateCount`` gets a 400 "Multiple candidates is not enabled"),
``api_key`` (a missing or different ``x-goog-api-key`` gets a 400
API_KEY_INVALID, as Google answers).

``Reply.calling(Call(...), text=...)`` sends ``functionCall`` parts (after a text part when
``text`` is set; a ``Call``'s ``id`` and ``signature`` as the part's ``functionCall.id`` and
``thoughtSignature``). Function calling is checked as the API checks it: ``tools`` hold
``functionDeclarations`` with a name and ``parameters`` or ``parametersJsonSchema`` (not
both); a content of ``functionResponse`` parts (each with a name and an object ``response``)
follows a ``model`` content of as many ``functionCall`` parts; and a call the server sent with
a thought signature must come back with it, on its part (as Gemini 3 requires).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from tests.support.openai_server import (
    Call,
    RecordedRequest,
    Reply,
    ScriptedServer,
    ScriptItem,
    as_reply,
    words,
)

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}


def gemini_error(
    status: int,
    message: str,
    *,
    status_name: str | None = None,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """A Google-shaped error body: ``{"error": {"code", "message", "status", "details"}}``."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": status_name or STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return Reply(status=status, json={"error": error}, headers=dict(headers or {}))


def retry_info(delay: str) -> dict[str, Any]:
    return {"@type": RETRY_INFO, "retryDelay": delay}


def quota_failure(quota_id: str, metric: str = "generate_content_requests") -> dict[str, Any]:
    return {"@type": QUOTA_FAILURE, "violations": [{"quotaMetric": metric, "quotaId": quota_id}]}


class GeminiServer(ScriptedServer):
    """Serves ``/v1beta/models/{model}:generateContent``; ``base_url`` is the root URL."""

    def __init__(
        self,
        replies: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        max_candidates: int | None = None,
        api_key: str | None = None,
    ) -> None:
        super().__init__(replies)
        self.max_candidates = max_candidates
        self.api_key = api_key
        self.signed: dict[str, str] = {}  # call (name and args, as JSON) -> the signature sent with it

    @property
    def base_url(self) -> str:
        return self.root_url

    def respond(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes, float]:
        path = record.path
        if not (path.startswith("/v1beta/models/") and path.endswith(":generateContent")):
            return self.refuse(gemini_error(404, f"Path {path} was not found."))
        model = path[len("/v1beta/models/"):-len(":generateContent")]
        body = record.body
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return self.refuse(gemini_error(400, "Invalid JSON payload: contents is required."))
        if self.api_key is not None and record.headers.get("x-goog-api-key") != self.api_key:
            return self.refuse(gemini_error(
                400, "API key not valid. Please pass a valid API key.",
                details=[{"@type": ERROR_INFO, "reason": "API_KEY_INVALID"}],
            ))
        problem = self._tool_problem(body)
        if problem:
            return self.refuse(gemini_error(400, problem))
        config = body.get("generationConfig") or {}
        count = int(config.get("candidateCount", 1))
        if self.max_candidates is not None and count > self.max_candidates:
            return self.refuse(gemini_error(400, f"Multiple candidates is not enabled for models/{model}"))
        item = self.next_item(record)
        if item is None:
            return self.refuse(gemini_error(400, f"no scripted reply left for request #{len(self.requests)}"))
        reply = as_reply(item, count)
        delay = reply.delay_s
        if reply.then is not None:
            reply = as_reply(reply.then, count)
        if reply.status != 200 or reply.json is not None or reply.body is not None:
            return (*self.encode(reply, None), delay)
        texts = list(reply.texts or [])
        prompt_words = sum(
            words(str(p.get("text", "")))
            for c in body["contents"] + [body.get("systemInstruction") or {"parts": []}]
            for p in c.get("parts", [])
        )
        usage = reply.usage or {"prompt_tokens": prompt_words, "completion_tokens": sum(map(words, texts))}
        payload = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": self._parts(text, reply.calls)},
                    "finishReason": reply.finish_reason or "STOP",
                    "index": i,
                }
                for i, text in enumerate(texts)
            ],
            "usageMetadata": {
                "promptTokenCount": usage.get("prompt_tokens", 0),
                "candidatesTokenCount": usage.get("completion_tokens", 0),
                "totalTokenCount": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
            },
            "modelVersion": model,
        }
        return (*self.encode(reply, payload), delay)

    def _parts(self, text: str, calls: list[Call]) -> list[dict[str, Any]]:
        if not calls:
            return [{"text": text}]
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for call in calls:
            function: dict[str, Any] = {"name": call.name, "args": call.arguments}
            if call.id:
                function["id"] = call.id
            part: dict[str, Any] = {"functionCall": function}
            if call.signature:
                part["thoughtSignature"] = call.signature
                with self._lock:
                    self.signed[_call_key(function)] = call.signature
            parts.append(part)
        return parts

    def _tool_problem(self, body: dict[str, Any]) -> str:
        """What generateContent refuses in a request's tools and function turns ("" when nothing)."""
        for tool in body.get("tools") or []:
            for declaration in (tool.get("functionDeclarations") or []) if isinstance(tool, dict) else [None]:
                if not isinstance(declaration, dict) or not isinstance(declaration.get("name"), str):
                    return "Invalid JSON payload: tools[].functionDeclarations[] needs a name."
                if "parameters" in declaration and "parametersJsonSchema" in declaration:
                    return "parameters and parametersJsonSchema are mutually exclusive."
        calls = 0  # functionCall parts of the model content just before
        for i, content in enumerate(body["contents"]):
            parts = [p for p in content.get("parts", []) if isinstance(p, dict)]
            answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
            if answers:
                if content.get("role") != "user" or len(answers) != calls:
                    return ("Please ensure that the number of function response parts is equal to the number "
                            "of function call parts of the function call turn.")
                if not all(isinstance(a, dict) and isinstance(a.get("name"), str)
                           and isinstance(a.get("response"), dict) for a in answers):
                    return f"contents[{i}]: a functionResponse needs a name and an object response."
            called = [p for p in parts if "functionCall" in p]
            for part in called:
                wanted = self.signed.get(_call_key(part["functionCall"]))
                if wanted is not None and part.get("thoughtSignature") != wanted:
                    return (f"Function call is missing a thought_signature in functionCall parts. This is "
                            f"required for tools to work correctly (contents[{i}]).")
            calls = len(called) if content.get("role") == "model" else 0
        return ""


def _call_key(function: dict[str, Any]) -> str:
    return json.dumps([function.get("name"), function.get("args")], sort_keys=True)
