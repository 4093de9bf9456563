"""The openai backend against a real HTTP server on 127.0.0.1 speaking Chat Completions."""

from __future__ import annotations

import email.utils
import time

import pytest
from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest, FatalLLMError, Message, RetryableLLMError
from geak_core.engine.plugins import PluginManager
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_openai.backend import OpenAIBackend, OpenAIOptions, is_reasoning_model

from tests.support.llm_calls import Sleeps
from tests.support.openai_server import OpenAIServer, Reply

KEY = "sk-test-0123456789abcdef"


def make(srv: OpenAIServer, sleeps: Sleeps | None = None, **options) -> OpenAIBackend:
    options.setdefault("model", "test-model")
    options.setdefault("max_retries", 3)
    policy = RetryPolicy(sleep=sleeps if sleeps is not None else Sleeps(), random=lambda: 0.5)
    return OpenAIBackend(OpenAIOptions(base_url=srv.base_url, **options), retry=policy)


def ask(text: str = "write a kernel", **fields) -> ChatRequest:
    return ChatRequest([Message("system", "you write Triton"), Message("user", text)], **fields)


# -- success ---------------------------------------------------------------


def test_reply_text_usage_model_and_finish_reason_are_returned():
    with OpenAIServer([Reply(texts=["def kernel(): pass"], usage={"prompt_tokens": 12, "completion_tokens": 5})]) as srv:
        response = make(srv).complete(ask())
    assert response.texts == ["def kernel(): pass"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 5)
    assert response.model == "test-model"
    assert response.finish_reasons == ["stop"]
    assert response.latency_s > 0
    assert response.raw[0]["choices"][0]["message"]["content"] == "def kernel(): pass"


def test_request_carries_model_messages_recipe_sampling_options_and_the_request_seed():
    with OpenAIServer(["ok"]) as srv:
        make(srv, temperature=0.7, top_p=0.9, max_completion_tokens=256).complete(ask("hi", seed=11))
    body = srv.requests[0].body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "you write Triton"},
        {"role": "user", "content": "hi"},
    ]
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (0.7, 0.9, 11, 256)
    assert "n" not in body


def test_request_fields_override_recipe_sampling_options():
    with OpenAIServer(["ok"]) as srv:
        make(srv, temperature=0.7, max_completion_tokens=256).complete(ask(temperature=0.1, max_tokens=64))
    body = srv.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.1, 64)


def test_a_request_without_a_seed_sends_none():
    with OpenAIServer(["ok"]) as srv:
        make(srv).complete(ask("hi"))
    assert "seed" not in srv.requests[0].body


def test_the_seed_is_a_run_setting_not_a_backend_option():
    with pytest.raises(TypeError):
        OpenAIOptions(model="m", seed=3)  # type: ignore[call-arg]


def test_identity_names_provider_base_url_and_model():
    with OpenAIServer() as srv:
        backend = make(srv, model="qwen2.5-coder")
        assert backend.identity() == {
            "provider": "openai", "base_url": srv.base_url, "model": "qwen2.5-coder"
        }


def test_recipe_price_gives_cost_of_the_call():
    reply = Reply(texts=["x"], usage={"prompt_tokens": 1_000_000, "completion_tokens": 500_000})
    with OpenAIServer([reply]) as srv:
        response = make(srv, price_per_mtok_input=2.0, price_per_mtok_output=8.0).complete(ask())
    assert response.cost_usd == pytest.approx(2.0 + 4.0)


def test_cost_is_unknown_without_a_price_for_a_custom_server():
    with OpenAIServer(["x"]) as srv:
        assert make(srv, model="gpt-4.1").complete(ask()).cost_usd is None


# -- several samples ---------------------------------------------------------


def test_n_samples_come_from_one_request():
    with OpenAIServer([["a", "b", "c"]]) as srv:
        response = make(srv).complete(ask(n=3))
    assert response.texts == ["a", "b", "c"]
    assert len(srv.requests) == 1 and srv.requests[0].body["n"] == 3


def test_server_refusing_n_gets_concurrent_single_requests_with_distinct_seeds():
    with OpenAIServer(lambda req: f"seed {req.body.get('seed')}", max_n=1) as srv:
        response = make(srv).complete(ask(n=3, seed=100))
    assert response.texts == ["seed 100", "seed 101", "seed 102"]
    singles = [r.body for r in srv.requests[1:]]
    assert len(singles) == 3 and all("n" not in b for b in singles)


def test_llama_cpp_wording_of_n_refusal_is_recognised():
    refusal = Reply(status=400, json={"error": {"code": 400, "message": "Only one completion choice is allowed", "type": "invalid_request_error"}})
    with OpenAIServer([refusal, "x", "y"]) as srv:
        assert sorted(make(srv).complete(ask(n=2)).texts) == ["x", "y"]


def test_server_returning_fewer_choices_is_topped_up_with_single_requests():
    with OpenAIServer([["first"], "second", "third"]) as srv:
        response = make(srv).complete(ask(n=3))
    assert sorted(response.texts) == ["first", "second", "third"]
    assert response.texts[0] == "first"
    assert len(srv.requests) == 3


def test_fallback_to_single_requests_is_remembered():
    with OpenAIServer(lambda req: "s", max_n=1) as srv:
        backend = make(srv)
        backend.complete(ask(n=2))
        before = len(srv.requests)
        backend.complete(ask(n=2))
    assert len(srv.requests) - before == 2
    assert all("n" not in r.body for r in srv.requests[before:])


def test_native_n_mode_makes_a_refusal_fatal():
    with OpenAIServer(["x"], max_n=1) as srv:
        with pytest.raises(FatalLLMError, match="refuses n=2"):
            make(srv, n_mode="native").complete(ask(n=2))


def test_concurrent_n_mode_never_sends_n():
    with OpenAIServer(lambda req: "s") as srv:
        assert make(srv, n_mode="concurrent").complete(ask(n=3)).texts == ["s", "s", "s"]
    assert len(srv.requests) == 3 and all("n" not in r.body for r in srv.requests)


def test_usage_of_single_requests_is_summed():
    usage = {"prompt_tokens": 10, "completion_tokens": 3}
    with OpenAIServer([Reply(texts=["a"], usage=usage)] * 3, max_n=1) as srv:
        response = make(srv).complete(ask(n=3))
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 9)


def test_concurrency_limit_bounds_requests_in_flight():
    with OpenAIServer(lambda req: Reply.stall(0.1, "x")) as srv:
        make(srv, n_mode="concurrent", max_concurrency=2).complete(ask(n=6))
    assert srv.peak_concurrency == 2
    assert len(srv.requests) == 6


# -- retries -----------------------------------------------------------------


def test_rate_limit_is_retried_after_retry_after_ms():
    limited = Reply.error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"retry-after-ms": "250"})
    sleeps = Sleeps()
    with OpenAIServer([limited, "done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    assert sleeps == [0.25]


def test_rate_limit_is_retried_after_retry_after_seconds():
    limited = Reply.error(429, "Rate limit reached", headers={"Retry-After": "3"})
    sleeps = Sleeps()
    with OpenAIServer([limited, "done"]) as srv:
        make(srv, sleeps).complete(ask())
    assert sleeps == [3.0]


def test_retry_after_as_http_date_is_honoured():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    sleeps = Sleeps()
    with OpenAIServer([Reply.error(503, "overloaded", headers={"Retry-After": when}), "done"]) as srv:
        make(srv, sleeps).complete(ask())
    assert 25 < sleeps[0] <= 30


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_transient_status_is_retried_with_jittered_backoff(status):
    sleeps = Sleeps()
    with OpenAIServer([Reply.error(status, "try later"), Reply.error(status, "try later"), "done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    # random() is pinned to 0.5: half of 1 s, then half of 2 s
    assert sleeps == [0.5, 1.0]


def test_retries_give_up_with_a_retryable_error_naming_the_attempts():
    with OpenAIServer([Reply.error(500, "boom")] * 4) as srv:
        with pytest.raises(RetryableLLMError, match=r"HTTP 500 .*boom.*gave up after 4 attempts"):
            make(srv, max_retries=3).complete(ask())
    assert len(srv.requests) == 4


def test_wait_longer_than_allowed_ends_the_call():
    with OpenAIServer([Reply.error(429, "later", headers={"retry-after": "86400"})]) as srv:
        with pytest.raises(RetryableLLMError, match="asks to wait 86400 s"):
            make(srv).complete(ask())


def test_read_timeout_is_retried():
    sleeps = Sleeps()
    with OpenAIServer([Reply.stall(1.0, "late"), "on time"]) as srv:
        response = make(srv, sleeps, timeout_read_s=0.2).complete(ask())
    assert response.texts == ["on time"]
    assert len(sleeps) == 1


def test_read_timeout_on_every_attempt_raises_a_retryable_error():
    with OpenAIServer([Reply.stall(1.0, "late")] * 2) as srv:
        with pytest.raises(RetryableLLMError, match="timed out waiting for the reply"):
            make(srv, timeout_read_s=0.15, max_retries=1).complete(ask())


def test_connection_refused_is_retried_then_reported():
    srv = OpenAIServer().start()
    backend = make(srv, max_retries=1)
    srv.stop()
    with pytest.raises(RetryableLLMError, match="connection to .* failed"):
        backend.complete(ask())


def test_body_that_is_not_json_is_retried():
    with OpenAIServer([Reply.raw("<html>bad gateway</html>"), "fine"]) as srv:
        assert make(srv).complete(ask()).texts == ["fine"]


def test_body_that_is_never_json_raises_naming_the_body():
    with OpenAIServer([Reply.raw("<html>oops</html>")] * 2) as srv:
        with pytest.raises(RetryableLLMError, match="not valid JSON: <html>oops</html>"):
            make(srv, max_retries=1).complete(ask())


def test_json_body_without_choices_is_fatal():
    with OpenAIServer([Reply(json={"result": "hello"})]) as srv:
        with pytest.raises(FatalLLMError, match="no 'choices' list"):
            make(srv).complete(ask())


# -- fatal errors ------------------------------------------------------------


def test_rejected_key_is_fatal_and_never_echoes_the_key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    bad = Reply.error(401, f"Incorrect API key provided: {KEY}.", code="invalid_api_key")
    with OpenAIServer([bad]) as srv:
        with pytest.raises(FatalLLMError) as caught:
            make(srv, api_key_env="TEST_LLM_KEY").complete(ask())
    message = str(caught.value)
    assert "openai: HTTP 401" in message and "Incorrect API key provided" in message
    assert "$TEST_LLM_KEY" in message
    assert KEY not in message
    assert len(srv.requests) == 1


def test_forbidden_is_fatal():
    with OpenAIServer([Reply.error(403, "Project does not have access to model")]) as srv:
        with pytest.raises(FatalLLMError, match="403.*does not have access"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_exhausted_quota_is_fatal():
    quota = Reply.error(429, "You exceeded your current quota, please check your plan and billing details.",
                        type="insufficient_quota", code="insufficient_quota")
    with OpenAIServer([quota]) as srv:
        with pytest.raises(FatalLLMError, match="quota or billing exhausted"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_invalid_request_is_fatal():
    too_long = Reply.error(400, "This model's maximum context length is 128000 tokens.", code="context_length_exceeded")
    with OpenAIServer([too_long]) as srv:
        with pytest.raises(FatalLLMError, match="400.*maximum context length"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_unknown_model_is_fatal():
    missing = Reply.error(404, "The model `gpt-9` does not exist", code="model_not_found")
    with OpenAIServer([missing]) as srv:
        with pytest.raises(FatalLLMError, match="404.*gpt-9.*unknown model"):
            make(srv, model="gpt-9").complete(ask())


# -- keys --------------------------------------------------------------------


def test_default_key_is_not_sent_to_a_custom_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIServer(["ok"]) as srv:
        make(srv).complete(ask())
    assert "authorization" not in srv.requests[0].headers


def test_explicitly_named_key_is_sent_to_a_custom_base_url(monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-secret")
    with OpenAIServer(["ok"], api_key="local-secret") as srv:
        assert make(srv, api_key_env="LOCAL_LLM_KEY").complete(ask()).texts == ["ok"]
    assert srv.requests[0].headers["authorization"] == "Bearer local-secret"


def test_explicitly_named_key_that_is_unset_is_an_input_error(monkeypatch):
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    with OpenAIServer() as srv:
        with pytest.raises(InputError, match="LOCAL_LLM_KEY is not set"):
            make(srv, api_key_env="LOCAL_LLM_KEY")


def test_official_endpoint_without_its_key_is_an_input_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY is not set"):
        OpenAIBackend(OpenAIOptions(model="gpt-4.1"))


# -- reasoning models and parameters servers reject -------------------------


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "openai/o3"])
def test_reasoning_models_are_recognised(model):
    assert is_reasoning_model(model)


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-4o-mini", "gpt-5-chat-latest", "qwen3-coder", "olmo"])
def test_other_models_are_not_reasoning_models(model):
    assert not is_reasoning_model(model)


def test_reasoning_model_gets_no_sampling_parameters():
    with OpenAIServer(["ok"]) as srv:
        make(srv, model="o3-mini", temperature=0.7, top_p=0.9, max_completion_tokens=100,
             reasoning_effort="high").complete(ask(temperature=0.2))
    body = srv.requests[0].body
    assert "temperature" not in body and "top_p" not in body
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert body["reasoning_effort"] == "high"


def test_reasoning_can_be_forced_off_for_a_model_that_looks_like_one():
    with OpenAIServer(["ok"]) as srv:
        make(srv, model="o3-distill", reasoning="off", temperature=0.7).complete(ask())
    assert srv.requests[0].body["temperature"] == 0.7


def test_rejected_parameter_is_dropped_retried_once_and_remembered():
    with OpenAIServer(lambda req: "ok", reject_params={"temperature"}) as srv:
        backend = make(srv, temperature=0.7)
        assert backend.complete(ask()).texts == ["ok"]
        backend.complete(ask())
    sent = [r.body for r in srv.requests]
    assert "temperature" in sent[0]
    assert "temperature" not in sent[1] and "temperature" not in sent[2]
    assert len(sent) == 3


def test_rejected_max_tokens_is_renamed_to_max_completion_tokens():
    with OpenAIServer(lambda req: "ok", reject_params={"max_tokens"}) as srv:
        make(srv, max_completion_tokens=64).complete(ask())
    assert srv.requests[-1].body["max_completion_tokens"] == 64
    assert "max_tokens" not in srv.requests[-1].body


def test_a_400_not_about_a_parameter_is_not_retried():
    with OpenAIServer([Reply.error(400, "messages: invalid role 'tool'")]) as srv:
        with pytest.raises(FatalLLMError):
            make(srv, temperature=0.5).complete(ask())
    assert len(srv.requests) == 1


# -- registration ------------------------------------------------------------


def test_backend_is_registered_under_openai():
    spec = PluginManager().spec("llm_backend", "openai")
    assert spec.options is OpenAIOptions
    with OpenAIServer() as srv:
        backend = spec.build(OpenAIOptions(model="m", base_url=srv.base_url))
        assert backend.max_concurrency == 8


def test_servers_on_this_machine_are_reached_directly_despite_a_proxy(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:9")
    monkeypatch.setenv("http_proxy", "http://10.255.255.1:9")
    with OpenAIServer(["direct"]) as srv:
        assert make(srv, max_retries=0).complete(ask()).texts == ["direct"]


def test_odd_usage_values_and_completions_style_choices_are_tolerated():
    body = {"model": "m", "choices": [{"index": 0, "text": "legacy", "finish_reason": "length"}],
            "usage": {"prompt_tokens": None, "completion_tokens": "7"}}
    with OpenAIServer([Reply(json=body)]) as srv:
        response = make(srv).complete(ask())
    assert response.texts == ["legacy"] and response.finish_reasons == ["length"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (0, 7)
