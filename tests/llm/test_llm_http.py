"""The shared HTTP layer: retry hints, classification, keys, prices, backoff."""

from __future__ import annotations

import email.utils
import json
import time

import pytest
from geak_core.api.errors import InputError
from geak_core.api.llm import FatalLLMError, RetryableLLMError, Usage
from geak_core.kit.llm_http import (
    JsonHttpClient,
    Price,
    RetryPolicy,
    classify_http_error,
    parse_error_body,
    parse_retry_after,
    price_for,
    resolve_api_key,
    run_concurrently,
)

from tests.support.openai_server import OpenAIServer, Reply

URL = "https://api.example.com/v1/chat/completions"


def classify(status: int, body: dict | str, headers: dict | None = None, **kw):
    text = body if isinstance(body, str) else json.dumps(body)
    return classify_http_error("prov", status, URL, text, headers or {}, **kw)


# -- retry hints ---------------------------------------------------------------


def test_retry_after_ms_wins_over_retry_after():
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5


def test_retry_after_in_seconds():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0


def test_retry_after_as_http_date_is_measured_from_now():
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 42, usegmt=True)
    assert parse_retry_after({"Retry-After": header}, now=lambda: now) == pytest.approx(42, abs=1)


def test_retry_after_date_in_the_past_means_no_wait():
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_google_retry_info_delay_is_read():
    detail = parse_error_body(json.dumps({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "slow", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}))
    assert parse_retry_after({}, detail) == 37.0


def test_try_again_wording_in_the_message_is_a_hint():
    detail = parse_error_body(json.dumps({"error": {"message": "Rate limit reached. Please try again in 820ms."}}))
    assert parse_retry_after({}, detail) == pytest.approx(0.82)


def test_no_hint_gives_none():
    assert parse_retry_after({}, parse_error_body("{}")) is None


# -- error bodies ----------------------------------------------------------------


def test_openai_error_body_fields_are_read():
    detail = parse_error_body(json.dumps({"error": {"message": "bad", "type": "invalid_request_error", "param": "n", "code": "x"}}))
    assert (detail.message, detail.type, detail.param, detail.code) == ("bad", "invalid_request_error", "n", "x")


def test_plain_string_error_body_is_read():
    assert parse_error_body('{"error": "model not loaded"}').message == "model not loaded"


def test_non_json_error_body_is_kept_as_text():
    assert parse_error_body("<html>\n  502 Bad Gateway\n</html>").message == "<html> 502 Bad Gateway </html>"


# -- classification ----------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retryable(status):
    assert isinstance(classify(status, {"error": {"message": "later"}}), RetryableLLMError)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_request_errors_are_fatal(status):
    assert isinstance(classify(status, {"error": {"message": "no"}}), FatalLLMError)


def test_message_names_provider_status_url_and_server_message():
    error = classify(404, {"error": {"message": "The model `x` does not exist", "code": "model_not_found"}})
    assert str(error).startswith(f"prov: HTTP 404 from {URL}: model_not_found: The model `x` does not exist")


def test_secrets_are_removed_from_messages():
    error = classify(401, {"error": {"message": "Incorrect API key provided: sk-secret"}}, secrets=["sk-secret"])
    assert "sk-secret" not in str(error) and "***" in str(error)


def test_query_string_of_the_url_is_not_shown():
    error = classify_http_error("prov", 400, URL + "?key=abc", "{}", {})
    assert "abc" not in str(error)


def test_openai_insufficient_quota_is_fatal():
    error = classify(429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}})
    assert isinstance(error, FatalLLMError) and "quota or billing exhausted" in str(error)


def test_billing_wording_without_a_retry_hint_is_fatal():
    error = classify(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                                     "message": "You exceeded your current quota, please check your plan and billing details."}})
    assert isinstance(error, FatalLLMError)


def test_billing_wording_with_a_retry_hint_is_a_rate_limit():
    error = classify(429, {"error": {"status": "RESOURCE_EXHAUSTED", "message": "You exceeded your current quota, please check your plan and billing details.",
                                     "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20s"}]}})
    assert isinstance(error, RetryableLLMError) and error.retry_after_s == 20.0


def test_quota_of_zero_is_fatal():
    error = classify(429, {"error": {"status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded for metric: x, limit: 0, model: gemini-2.5-pro"}})
    assert isinstance(error, FatalLLMError)


def test_redirect_is_fatal_and_names_the_target():
    error = classify(307, "", {"location": "https://elsewhere.example/v1"})
    assert isinstance(error, FatalLLMError) and "elsewhere.example" in str(error)


def test_rejected_key_message_says_where_the_key_came_from():
    assert "$MY_KEY" in str(classify(401, {"error": {"message": "bad key"}}, auth_hint="it comes from $MY_KEY"))


# -- backoff -----------------------------------------------------------------------


def test_full_jitter_backoff_grows_exponentially_up_to_the_cap():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0, random=lambda: 1.0)
    assert [policy.backoff(a) for a in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_full_jitter_draws_between_zero_and_the_ceiling():
    policy = RetryPolicy(base_delay_s=1.0, random=lambda: 0.25)
    assert policy.backoff(3) == 2.0


def test_client_retries_then_returns_the_decoded_body():
    sleeps: list[float] = []
    with OpenAIServer([Reply.error(503, "busy"), "ok"]) as srv:
        client = JsonHttpClient("prov", retry=RetryPolicy(sleep=sleeps.append, random=lambda: 1.0))
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        reply = client.post_json(srv.base_url + "/chat/completions", body)
    assert reply.attempts == 2 and reply.status == 200
    assert reply.data["choices"][0]["message"]["content"] == "ok"
    assert sleeps == [1.0]


def test_client_refuses_a_concurrency_limit_below_one():
    with pytest.raises(ValueError, match="max_concurrency"):
        JsonHttpClient("prov", max_concurrency=0)


# -- keys --------------------------------------------------------------------------


def resolve(base_url: str, api_key_env: str | None, environ: dict) -> tuple:
    return resolve_api_key("openai", base_url=base_url, api_key_env=api_key_env, default_env="OPENAI_API_KEY",
                           default_host="api.openai.com", environ=environ)


def test_default_key_goes_to_the_official_host():
    assert resolve("https://api.openai.com/v1", None, {"OPENAI_API_KEY": "k"}) == ("k", "OPENAI_API_KEY")


@pytest.mark.parametrize("url", ["http://localhost:8000/v1", "https://api.openai.com.evil.example/v1",
                                 "http://api.openai.com/v1", "https://proxy.example/api.openai.com/v1"])
def test_default_key_never_goes_elsewhere(url):
    assert resolve(url, None, {"OPENAI_API_KEY": "k"}) == (None, None)


def test_named_key_goes_where_the_recipe_points():
    assert resolve("http://localhost:8000/v1", "VLLM_KEY", {"VLLM_KEY": "v"}) == ("v", "VLLM_KEY")


def test_missing_key_is_an_input_error_naming_the_variable():
    with pytest.raises(InputError, match="VLLM_KEY is not set"):
        resolve("http://localhost:8000/v1", "VLLM_KEY", {})


# -- prices ------------------------------------------------------------------------


def test_price_is_per_million_tokens():
    assert Price(2.0, 8.0).cost(Usage(500_000, 250_000)) == pytest.approx(3.0)


def test_longest_listed_prefix_gives_the_price():
    assert price_for("openai", "gpt-4.1-mini-2025-04-14") == Price(0.40, 1.60)
    assert price_for("openai", "gpt-4.1-2025-04-14") == Price(2.0, 8.0)


def test_unlisted_model_has_no_price():
    assert price_for("openai", "my-finetune") is None


def test_recipe_price_overrides_the_table_and_table_can_be_disabled():
    assert price_for("openai", "gpt-4.1", 1.0, 2.0) == Price(1.0, 2.0)
    assert price_for("openai", "gpt-4.1", use_table=False) is None


# -- concurrency helper ------------------------------------------------------------


def test_run_concurrently_keeps_order_and_raises_the_first_failure():
    assert run_concurrently(lambda i: i * i, 4, 4) == [0, 1, 4, 9]

    def flaky(i: int) -> int:
        time.sleep(0.01 * (3 - i))
        if i in (1, 2):
            raise ValueError(f"call {i}")
        return i

    with pytest.raises(ValueError, match="call 1"):
        run_concurrently(flaky, 4, 4)


def test_sample_fan_out_learns_once_that_a_server_refuses_native_samples():
    from geak_core.kit.llm_http import SampleFanOut, SamplesRefused

    asked: list[tuple[int, int]] = []

    def send(k: int, first: int) -> list[str]:
        asked.append((k, first))
        if k > 1:
            raise SamplesRefused("n must be 1")
        return [f"s{first}"]

    fan = SampleFanOut("prov", "auto", "http://x", "n", max_concurrency=1)
    assert fan.collect(3, send, len) == [["s0"], ["s1"], ["s2"]]
    assert asked == [(3, 0), (1, 0), (1, 1), (1, 2)]
    asked.clear()
    assert fan.collect(2, send, len) == [["s0"], ["s1"]]
    assert asked == [(1, 0), (1, 1)]  # no second native attempt


def test_sample_fan_out_native_mode_makes_a_short_answer_fatal():
    from geak_core.kit.llm_http import SampleFanOut

    fan = SampleFanOut("prov", "native", "http://x", "n", max_concurrency=4)
    with pytest.raises(FatalLLMError, match="asked http://x for n=3, got 1 samples"):
        fan.collect(3, lambda k, first: ["only one"], len)
    assert fan.collect(1, lambda k, first: ["one"], len) == [["one"]]
    with pytest.raises(FatalLLMError, match="n must be at least 1"):
        fan.collect(0, lambda k, first: [], len)


def test_merge_samples_keeps_the_first_n_and_sums_and_prices_every_request():
    from geak_core.kit.llm_http import SampleBatch, merge_samples

    batches = [
        SampleBatch(["a", "b"], ["stop", "stop"], Usage(10, 5), "m-2025", {"id": 1}),
        SampleBatch(["c"], ["length"], Usage(10, 7), "m-other", {"id": 2}),
    ]
    response = merge_samples(batches, 2, 1.5, "m", Price(1.0, 2.0))
    assert response.texts == ["a", "b"] and response.finish_reasons == ["stop", "stop"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (20, 12)
    assert response.cost_usd == pytest.approx((20 * 1.0 + 12 * 2.0) / 1e6)
    assert response.model == "m-2025" and response.raw == [{"id": 1}, {"id": 2}]
    assert merge_samples([], 1, 0.0, "m", None).model == "m"


def test_a_keyed_client_names_where_a_rejected_key_came_from_and_never_shows_it():
    from geak_core.kit.llm_http import keyed_client

    with OpenAIServer([Reply.error(401, "key sk-secret is wrong")]) as server:
        client = keyed_client("prov", "sk-secret", "MY_KEY", max_retries=0)
        with pytest.raises(FatalLLMError) as caught:
            client.post_json(server.base_url + "/chat/completions", {"messages": []})
        client.close()
    assert "it comes from $MY_KEY" in str(caught.value) and "sk-secret" not in str(caught.value)
    assert "no key is sent" in keyed_client("prov", None, None, max_retries=0)._auth_hint
