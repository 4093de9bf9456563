"""The gemini backend against a real HTTP server on 127.0.0.1 speaking generateContent."""

from __future__ import annotations

import pytest
from geak_core.api.errors import InputError
from geak_core.api.llm import FatalLLMError, RetryableLLMError
from geak_core.engine.plugins import PluginManager
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_gemini.backend import GeminiBackend, GeminiOptions

from tests.support.gemini_server import GeminiServer, gemini_error, quota_failure, retry_info
from tests.support.llm_calls import Sleeps
from tests.support.llm_calls import conversation as ask
from tests.support.openai_server import Reply

KEY = "AIzaTestKey0123456789"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("TEST_GEMINI_KEY", KEY)


def make(srv: GeminiServer, sleeps: Sleeps | None = None, **options) -> GeminiBackend:
    options.setdefault("model", "gemini-test")
    options.setdefault("api_key_env", "TEST_GEMINI_KEY")
    options.setdefault("max_retries", 3)
    policy = RetryPolicy(sleep=sleeps if sleeps is not None else Sleeps(), random=lambda: 0.5)
    return GeminiBackend(GeminiOptions(base_url=srv.base_url, **options), retry=policy)



def candidate(reason: str, text: str | None = None, **extra) -> dict:
    content = {"role": "model", "parts": [{"text": text}]} if text is not None else {}
    return {"content": content, "finishReason": reason, "index": 0, **extra}


# -- success ---------------------------------------------------------------


def test_reply_text_usage_and_finish_reason_are_returned():
    reply = Reply(texts=["code here"], usage={"prompt_tokens": 40, "completion_tokens": 7})
    with GeminiServer([reply], api_key=KEY) as srv:
        response = make(srv).complete(ask())
    assert response.texts == ["code here"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (40, 7)
    assert response.finish_reasons == ["STOP"]
    assert response.model == "gemini-test"


def test_request_uses_system_instruction_roles_and_generation_config():
    with GeminiServer(["ok"]) as srv:
        make(srv, temperature=0.4, top_p=0.8, max_output_tokens=512,
             thinking_budget=128).complete(ask(seed=9))
    request = srv.requests[0]
    assert request.path == "/v1beta/models/gemini-test:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    body = request.body
    assert body["systemInstruction"] == {"parts": [{"text": "you write Triton"}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [{"text": "def add(): ..."}]
    assert body["generationConfig"] == {
        "temperature": 0.4, "topP": 0.8, "maxOutputTokens": 512, "seed": 9,
        "thinkingConfig": {"thinkingBudget": 128},
    }


def test_thinking_tokens_count_as_completion_tokens_and_thoughts_are_not_text():
    body = {
        "candidates": [{"content": {"parts": [{"text": "plan...", "thought": True}, {"text": "answer"}]},
                        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 20},
    }
    with GeminiServer([Reply(json=body)]) as srv:
        response = make(srv).complete(ask())
    assert response.texts == ["answer"]
    assert response.usage.completion_tokens == 25


def test_identity_names_provider_base_url_and_model():
    with GeminiServer() as srv:
        assert make(srv, model="models/gemini-2.5-pro").identity() == {
            "provider": "gemini", "base_url": srv.base_url, "model": "gemini-2.5-pro"
        }


def test_recipe_price_gives_cost():
    reply = Reply(texts=["x"], usage={"prompt_tokens": 2_000_000, "completion_tokens": 100_000})
    with GeminiServer([reply]) as srv:
        response = make(srv, price_per_mtok_input=1.25, price_per_mtok_output=10.0).complete(ask())
    assert response.cost_usd == pytest.approx(2.5 + 1.0)


# -- several samples ---------------------------------------------------------


def test_candidate_count_gives_n_samples_in_one_request():
    with GeminiServer([["a", "b"]]) as srv:
        assert make(srv).complete(ask(n=2)).texts == ["a", "b"]
    assert srv.requests[0].body["generationConfig"]["candidateCount"] == 2


def test_model_refusing_candidate_count_gets_concurrent_requests():
    with GeminiServer(lambda req: f"seed {req.body['generationConfig'].get('seed')}", max_candidates=1) as srv:
        response = make(srv).complete(ask(n=3, seed=7))
    assert response.texts == ["seed 7", "seed 8", "seed 9"]
    assert all("candidateCount" not in r.body["generationConfig"] for r in srv.requests[1:])


def test_fewer_candidates_are_topped_up():
    with GeminiServer([["one"], "two"]) as srv:
        assert make(srv).complete(ask(n=2)).texts == ["one", "two"]


# -- retries -----------------------------------------------------------------


def test_rate_limit_waits_for_retry_info_delay():
    limited = gemini_error(429, "You exceeded your current quota, please check your plan and billing details. Please retry in 12.5s.",
                           details=[quota_failure("GenerateRequestsPerMinutePerProjectPerModel"), retry_info("12s")])
    sleeps = Sleeps()
    with GeminiServer([limited, "done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    assert sleeps == [12.0]


def test_unavailable_is_retried_with_backoff():
    sleeps = Sleeps()
    with GeminiServer([gemini_error(503, "The model is overloaded."), "done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    assert sleeps == [0.5]


def test_retries_give_up_with_a_retryable_error():
    with GeminiServer([gemini_error(500, "Internal error")] * 2) as srv:
        with pytest.raises(RetryableLLMError, match="gemini: HTTP 500.*INTERNAL.*gave up after 2"):
            make(srv, max_retries=1).complete(ask())


def test_read_timeout_is_retried():
    with GeminiServer([Reply.stall(1.0, "late"), "on time"]) as srv:
        assert make(srv, timeout_read_s=0.2).complete(ask()).texts == ["on time"]


def test_body_that_is_not_json_is_retried_then_reported():
    with GeminiServer([Reply.raw("upstream connect error")] * 2) as srv:
        with pytest.raises(RetryableLLMError, match="not valid JSON: upstream connect error"):
            make(srv, max_retries=1).complete(ask())


# -- fatal errors ------------------------------------------------------------


def test_invalid_key_is_fatal_and_not_retried():
    with GeminiServer(["never"], api_key="the-right-key") as srv:
        with pytest.raises(FatalLLMError, match="gemini: HTTP 400.*API key not valid") as caught:
            make(srv).complete(ask())
    assert KEY not in str(caught.value)
    assert len(srv.requests) == 1


def test_permission_denied_is_fatal():
    with GeminiServer([gemini_error(403, "Generative Language API has not been used in project 123")]) as srv:
        with pytest.raises(FatalLLMError, match="403.*PERMISSION_DENIED.*has not been used.*TEST_GEMINI_KEY"):
            make(srv).complete(ask())


def test_daily_quota_exhaustion_is_fatal_even_with_a_retry_delay():
    exhausted = gemini_error(429, "You exceeded your current quota.",
                             details=[quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retry_info("30s")])
    with GeminiServer([exhausted]) as srv:
        with pytest.raises(FatalLLMError, match="RESOURCE_EXHAUSTED.*quota or billing exhausted"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_unknown_model_is_fatal():
    with GeminiServer([gemini_error(404, "models/gemini-9 is not found for API version v1beta")]) as srv:
        with pytest.raises(FatalLLMError, match="404.*gemini-9 is not found"):
            make(srv, model="gemini-9").complete(ask())


def test_blocked_prompt_is_fatal_and_names_the_reason():
    blocked = Reply(json={"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})
    with GeminiServer([blocked]) as srv:
        with pytest.raises(FatalLLMError, match="blocked the prompt.*PROHIBITED_CONTENT"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_candidate_stopped_for_safety_is_fatal():
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    stopped = Reply(json={"candidates": [candidate("SAFETY", safetyRatings=ratings)]})
    with GeminiServer([stopped]) as srv:
        with pytest.raises(FatalLLMError, match="finishReason SAFETY.*HARM_CATEGORY_DANGEROUS_CONTENT"):
            make(srv).complete(ask())


def test_empty_candidate_is_fatal():
    with GeminiServer([Reply(json={"candidates": [candidate("STOP")]})]) as srv:
        with pytest.raises(FatalLLMError, match="empty candidate"):
            make(srv).complete(ask())


def test_candidate_cut_at_the_token_limit_is_returned_as_is():
    with GeminiServer([Reply(json={"candidates": [candidate("MAX_TOKENS")]})]) as srv:
        response = make(srv).complete(ask())
    assert response.texts == [""] and response.finish_reasons == ["MAX_TOKENS"]


def test_reply_without_candidates_is_fatal():
    with GeminiServer([Reply(json={"usageMetadata": {}})]) as srv:
        with pytest.raises(FatalLLMError, match="no candidates"):
            make(srv).complete(ask())


# -- keys --------------------------------------------------------------------


def test_default_key_is_not_sent_to_a_custom_base_url(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with GeminiServer(["ok"]) as srv:
        make(srv, api_key_env=None).complete(ask())
    assert "x-goog-api-key" not in srv.requests[0].headers


def test_official_endpoint_without_its_key_is_an_input_error(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(InputError, match="GEMINI_API_KEY is not set"):
        GeminiBackend(GeminiOptions(model="gemini-2.5-pro"))


def test_backend_is_registered_under_gemini():
    spec = PluginManager().spec("llm_backend", "gemini")
    assert spec.options is GeminiOptions
    with GeminiServer() as srv:
        assert spec.build(GeminiOptions(model="m", base_url=srv.base_url)).identity()["model"] == "m"
