"""The anthropic backend against a real HTTP server on 127.0.0.1 speaking the Messages API."""

from __future__ import annotations

import json
import textwrap
import threading
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner
from geak_core.api.errors import InputError
from geak_core.api.llm import FatalLLMError, RetryableLLMError
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.recording import Budget, BudgetExhausted, RecordedLLM
from geak_core.engine.store import RunStore
from geak_core.kit.llm_http import Price, RetryPolicy
from geak_llm_anthropic.backend import (
    API_VERSION,
    AnthropicBackend,
    AnthropicOptions,
    default_max_tokens,
)

from tests.agent.test_loop import ADD_OK
from tests.support.anthropic_server import (
    AnthropicServer,
    anthropic_error,
    message_body,
    text_block,
    thinking_block,
)
from tests.support.llm_calls import Sleeps
from tests.support.llm_calls import conversation as ask
from tests.support.openai_server import Reply

KEY = "sk-ant-test-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "anthropic.toml"


@pytest.fixture(autouse=True)
def _key_and_plugin(monkeypatch):
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", KEY)


def make(srv: AnthropicServer, sleeps: Sleeps | None = None, **options) -> AnthropicBackend:
    options.setdefault("model", "claude-test")
    options.setdefault("api_key_env", "TEST_ANTHROPIC_KEY")
    options.setdefault("max_retries", 3)
    policy = RetryPolicy(sleep=sleeps if sleeps is not None else Sleeps(), random=lambda: 0.5)
    return AnthropicBackend(AnthropicOptions(base_url=srv.base_url, **options), retry=policy)



def cost(usage: dict, input_price: float, output_price: float) -> float:
    """Anthropic's published rule: cache writes 1.25x the input price, cache reads 0.1x."""
    prompt = (usage["input_tokens"] + 1.25 * usage.get("cache_creation_input_tokens", 0)
              + 0.1 * usage.get("cache_read_input_tokens", 0))
    return (prompt * input_price + usage["output_tokens"] * output_price) / 1e6


# -- success ---------------------------------------------------------------


def test_reply_text_usage_model_stop_reason_and_cost_are_returned():
    usage = {"input_tokens": 2_000_000, "output_tokens": 100_000}
    with AnthropicServer([Reply(texts=["def kernel(): pass"], usage=usage)], api_key=KEY) as srv:
        response = make(srv, price_per_mtok_input=3.0, price_per_mtok_output=15.0).complete(ask())
    assert response.texts == ["def kernel(): pass"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (2_000_000, 100_000)
    assert response.finish_reasons == ["end_turn"]
    assert response.model == "claude-test"
    assert response.cost_usd == pytest.approx(6.0 + 1.5)
    assert response.raw[0]["content"] == [{"type": "text", "text": "def kernel(): pass"}]


def test_request_has_the_api_headers_top_level_system_turns_and_sampling_options():
    with AnthropicServer(["ok"], api_key=KEY) as srv:
        make(srv, temperature=0.4, top_p=0.8, max_tokens=512,
             stop_sequences=["</answer>"]).complete(ask(seed=9))
    request = srv.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == API_VERSION == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 512,
        "system": "you write Triton",
        "messages": [
            {"role": "user", "content": "write add"},
            {"role": "assistant", "content": "def add(): ..."},
            {"role": "user", "content": "now faster"},
        ],
        "temperature": 0.4,
        "top_p": 0.8,
        "stop_sequences": ["</answer>"],
    }  # no seed (the API has none), no n, no stream


def test_request_fields_override_recipe_sampling_options():
    with AnthropicServer(["ok"]) as srv:
        make(srv, temperature=0.7, max_tokens=256).complete(ask(temperature=0.1, max_tokens=64))
    body = srv.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.1, 64)


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-sonnet-4-20250514", 16384),
    ("claude-opus-4-1-20250805", 16384),
    ("claude-3-7-sonnet-latest", 16384),
    ("claude-3-5-haiku-20241022", 8192),
    ("claude-3-haiku-20240307", 4096),
    ("some-proxy-model", 8192),
])
def test_max_tokens_defaults_by_model_family(model, expected):
    with AnthropicServer(["ok"]) as srv:
        make(srv, model=model).complete(ask())
    assert srv.requests[0].body["max_tokens"] == expected


def test_identity_names_provider_base_url_and_model():
    with AnthropicServer() as srv:
        assert make(srv, model="claude-sonnet-4-5").identity() == {
            "provider": "anthropic", "base_url": srv.base_url, "model": "claude-sonnet-4-5"
        }


def test_answer_cut_at_max_tokens_is_returned_as_is():
    with AnthropicServer([Reply(texts=["def half("], finish_reason="max_tokens")]) as srv:
        response = make(srv).complete(ask())
    assert response.texts == ["def half("] and response.finish_reasons == ["max_tokens"]


# -- extended thinking --------------------------------------------------------


def test_thinking_blocks_stay_out_of_the_text_but_are_recorded_in_raw():
    blocks = [
        thinking_block("first draft: ```python\ndef wrong(): ...\n```"),
        {"type": "redacted_thinking", "data": "Enc0ded"},
        text_block("Strategy: tiles.\n"),
        text_block("```python\ndef right(): ...\n```"),
    ]
    usage = {"input_tokens": 30, "output_tokens": 900}
    with AnthropicServer([Reply(json=message_body(blocks, usage=usage))]) as srv:
        response = make(srv, thinking_budget_tokens=2048).complete(ask())
    assert response.texts == ["Strategy: tiles.\n```python\ndef right(): ...\n```"]
    assert "wrong" not in response.texts[0]
    recorded = response.to_dict()["raw"][0]["content"]  # what the run store keeps
    assert [b["type"] for b in recorded] == ["thinking", "redacted_thinking", "text", "text"]
    assert "def wrong()" in recorded[0]["thinking"]
    assert response.usage.completion_tokens == 900  # thinking is billed as output


def test_thinking_request_carries_the_budget_room_for_an_answer_and_temperature_one_only():
    with AnthropicServer(["ok"]) as srv:
        make(srv, model="claude-sonnet-4-5", thinking_budget_tokens=4096, temperature=1.0,
             top_p=0.95).complete(ask())
    body = srv.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 16384 + 4096
    assert (body["temperature"], body["top_p"]) == (1.0, 0.95)


def test_a_request_temperature_other_than_one_is_not_sent_while_thinking():
    with AnthropicServer(["ok"]) as srv:  # the server refuses such a temperature, as the API does
        response = make(srv, thinking_budget_tokens=2048).complete(ask(temperature=0.2, top_p=0.5))
    assert response.texts == ["ok"]
    assert "temperature" not in srv.requests[0].body and "top_p" not in srv.requests[0].body


@pytest.mark.parametrize(("options", "message"), [
    ({"temperature": 0.5}, "temperature must be 1 or unset"),
    ({"top_p": 0.5}, "top_p must be between 0.95 and 1.0"),
    ({"max_tokens": 2048}, "must exceed thinking_budget_tokens"),
    ({"thinking_budget_tokens": 512}, "at least 1024"),
])
def test_thinking_options_the_api_refuses_are_recipe_errors(options, message):
    options = {"model": "claude-sonnet-4", "thinking_budget_tokens": 2048, **options}
    with pytest.raises(ValueError, match=message):
        AnthropicOptions(**options)


def test_a_thinking_budget_beyond_the_models_output_ceiling_is_an_input_error():
    with AnthropicServer() as srv, pytest.raises(InputError, match="no room for an answer within the 8192"):
        make(srv, model="claude-3-5-haiku-20241022", thinking_budget_tokens=9000)


# -- prompt caching -------------------------------------------------------------


def test_prompt_cache_marks_the_system_prompt_and_the_first_user_message():
    with AnthropicServer(["ok"]) as srv:
        make(srv, prompt_cache=True).complete(ask())
    body = srv.requests[0].body
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "you write Triton", "cache_control": ephemeral}]
    assert body["messages"][0]["content"] == [{"type": "text", "text": "write add", "cache_control": ephemeral}]
    assert body["messages"][1:] == [
        {"role": "assistant", "content": "def add(): ..."}, {"role": "user", "content": "now faster"},
    ]


def test_without_prompt_cache_nothing_is_marked():
    with AnthropicServer(["ok"]) as srv:
        make(srv).complete(ask())
    assert "cache_control" not in json.dumps(srv.requests[0].body)


def test_cache_writes_and_reads_are_prompt_tokens_priced_at_their_own_rates():
    with AnthropicServer(lambda request: "def add(): pass", cache=True) as srv:
        backend = make(srv, prompt_cache=True, price_per_mtok_input=3.0, price_per_mtok_output=15.0)
        first = backend.complete(ask())
        second = backend.complete(ask())
    written, read = srv.usages
    assert written["cache_creation_input_tokens"] > 0 and written["cache_read_input_tokens"] == 0
    assert read["cache_read_input_tokens"] == written["cache_creation_input_tokens"]
    for response, usage in ((first, written), (second, read)):
        assert response.usage.prompt_tokens == (usage["input_tokens"] + usage["cache_creation_input_tokens"]
                                                + usage["cache_read_input_tokens"])
        assert response.usage.completion_tokens == usage["output_tokens"]
        assert response.cost_usd == pytest.approx(cost(usage, 3.0, 15.0))
    assert second.cost_usd < first.cost_usd


def test_cache_pricing_of_a_million_tokens_of_each_kind():
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000,
             "cache_creation_input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000}
    with AnthropicServer([Reply(texts=["x"], usage=usage)]) as srv:
        response = make(srv, price_per_mtok_input=3.0, price_per_mtok_output=15.0).complete(ask())
    assert response.cost_usd == pytest.approx(3.0 + 3.75 + 0.30 + 15.0)
    assert response.usage.prompt_tokens == 3_000_000


def test_one_hour_cache_writes_are_priced_at_twice_the_input_price():
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 3_000_000,
             "cache_creation": {"ephemeral_5m_input_tokens": 2_000_000, "ephemeral_1h_input_tokens": 1_000_000}}
    with AnthropicServer([Reply(texts=["x"], usage=usage)]) as srv:
        response = make(srv, price_per_mtok_input=1.0, price_per_mtok_output=5.0).complete(ask())
    assert response.cost_usd == pytest.approx(2 * 1.25 + 1 * 2.0)


# -- prices ------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "price"), [
    ("claude-opus-4-20250514", Price(15.0, 75.0)),
    ("claude-opus-4-1-20250805", Price(15.0, 75.0)),
    ("claude-opus-4-5-20251101", Price(5.0, 25.0)),
    ("claude-opus-4-6", Price(5.0, 25.0)),
    ("claude-sonnet-4-6", Price(3.0, 15.0)),
    ("claude-sonnet-4-5-20250929", Price(3.0, 15.0)),
    ("claude-sonnet-4-0", Price(3.0, 15.0)),
    ("claude-3-7-sonnet-latest", Price(3.0, 15.0)),
    ("claude-3-5-sonnet-20241022", Price(3.0, 15.0)),
    ("claude-3-5-haiku-20241022", Price(0.80, 4.0)),
    ("claude-haiku-4-5", Price(1.0, 5.0)),
    ("claude-future-9", None),
])
def test_list_prices_on_the_official_endpoint_match_the_longest_model_prefix(model, price, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert AnthropicBackend(AnthropicOptions(model=model)).price == price


def test_recipe_price_wins_over_the_list_price(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    backend = AnthropicBackend(AnthropicOptions(model="claude-sonnet-4", price_per_mtok_input=1.0,
                                                price_per_mtok_output=2.0))
    assert backend.price == Price(1.0, 2.0)


def test_cost_is_unknown_without_a_price_for_another_server():
    with AnthropicServer(["x"]) as srv:
        assert make(srv, model="claude-sonnet-4").complete(ask()).cost_usd is None


def test_default_max_tokens_leaves_room_for_the_answer_within_the_ceiling():
    assert default_max_tokens("claude-opus-4-1", 20000) == 32000
    assert default_max_tokens("claude-sonnet-4", 20000) == 36384


# -- several samples ----------------------------------------------------------------


def test_n_samples_are_concurrent_single_requests_with_usage_and_cost_summed():
    counter = iter(range(100))
    lock = threading.Lock()

    def script(request):
        with lock:
            i = next(counter)
        return Reply.stall(0.1, Reply(texts=[f"sample {i}"], usage={"input_tokens": 10, "output_tokens": 4}))

    with AnthropicServer(script) as srv:
        response = make(srv, max_concurrency=2, price_per_mtok_input=3.0,
                        price_per_mtok_output=15.0).complete(ask(n=4))
    assert sorted(response.texts) == ["sample 0", "sample 1", "sample 2", "sample 3"]
    assert len(srv.requests) == 4 and all("n" not in r.body for r in srv.requests)
    assert srv.peak_concurrency == 2
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (40, 16)
    assert response.cost_usd == pytest.approx((40 * 3.0 + 16 * 15.0) / 1e6)
    assert len(response.raw) == 4


# -- retries -----------------------------------------------------------------------


def test_rate_limit_429_is_retried_after_the_servers_retry_after():
    limited = anthropic_error(429, "Number of request tokens has exceeded your per-minute rate limit",
                              headers={"retry-after": "7"})
    sleeps = Sleeps()
    with AnthropicServer([limited, "done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    assert sleeps == [7.0]
    assert len(srv.requests) == 2


def test_overloaded_529_is_retried_with_backoff():
    sleeps = Sleeps()
    with AnthropicServer([anthropic_error(529, "Overloaded")] * 2 + ["done"]) as srv:
        assert make(srv, sleeps).complete(ask()).texts == ["done"]
    assert sleeps == [0.5, 1.0]  # random() pinned to 0.5: half of 1 s, then half of 2 s


def test_retries_give_up_with_a_retryable_error_naming_the_attempts():
    with AnthropicServer([anthropic_error(529, "Overloaded")] * 2) as srv:
        with pytest.raises(RetryableLLMError, match=r"anthropic: HTTP 529 .*Overloaded.*gave up after 2 attempts"):
            make(srv, max_retries=1).complete(ask())


def test_malformed_json_is_retried_then_reported_naming_the_url_and_body():
    with AnthropicServer([Reply.raw('{"type": "message", "content": [', content_type="application/json")] * 2) as srv:
        url = srv.base_url + "/v1/messages"
        with pytest.raises(RetryableLLMError) as caught:
            make(srv, max_retries=1).complete(ask())
    message = str(caught.value)
    assert f"HTTP 200 from {url} is not valid JSON" in message
    assert '{"type": "message", "content": [' in message


def test_malformed_json_once_is_retried():
    with AnthropicServer([Reply.raw("<html>bad gateway</html>"), "fine"]) as srv:
        assert make(srv).complete(ask()).texts == ["fine"]


def test_json_without_content_is_fatal():
    with AnthropicServer([Reply(json={"completion": "hello"})]) as srv:
        with pytest.raises(FatalLLMError, match="no 'content' list"):
            make(srv).complete(ask())


# -- fatal errors --------------------------------------------------------------------


def test_rejected_key_401_stops_with_the_variable_named_and_no_retry():
    with AnthropicServer(["never"], api_key="the-right-key") as srv:
        with pytest.raises(FatalLLMError) as caught:
            make(srv).complete(ask())
    message = str(caught.value)
    assert "anthropic: HTTP 401" in message and "invalid x-api-key" in message
    assert "$TEST_ANTHROPIC_KEY" in message and KEY not in message
    assert len(srv.requests) == 1


def test_permission_error_403_is_fatal():
    with AnthropicServer([anthropic_error(403, "Your API key does not have permission")]) as srv:
        with pytest.raises(FatalLLMError, match="403.*does not have permission"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


@pytest.mark.parametrize("refusal", [
    anthropic_error(400, "Your credit balance is too low to access the Anthropic API. Please go to "
                         "Plans & Billing to upgrade or purchase credits."),
    anthropic_error(400, "You have reached your specified API usage limits. You will regain access "
                         "on 2026-12-01 at 00:00 UTC."),
    anthropic_error(402, "There is an issue with your payment method."),
])
def test_exhausted_credit_or_usage_limit_stops_the_run_saying_so(refusal):
    with AnthropicServer([refusal]) as srv:
        with pytest.raises(FatalLLMError, match="credit balance or usage limit exhausted"):
            make(srv).complete(ask())
    assert len(srv.requests) == 1


def test_other_invalid_requests_are_fatal_without_billing_wording():
    too_long = anthropic_error(400, "prompt is too long: 210000 tokens > 200000 maximum")
    with AnthropicServer([too_long]) as srv:
        with pytest.raises(FatalLLMError, match="400.*prompt is too long") as caught:
            make(srv).complete(ask())
    assert "credit" not in str(caught.value)


def test_refusal_stop_reason_is_fatal():
    refused = message_body([], usage={"input_tokens": 5, "output_tokens": 0}, stop_reason="refusal")
    with AnthropicServer([Reply(json=refused)]) as srv:
        with pytest.raises(FatalLLMError, match="refused to answer"):
            make(srv).complete(ask())


# -- keys ------------------------------------------------------------------------------


def test_default_key_is_not_sent_to_a_custom_base_url(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer(["ok"]) as srv:
        make(srv, api_key_env=None).complete(ask())
    assert "x-api-key" not in srv.requests[0].headers


def test_official_endpoint_without_its_key_is_an_input_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicBackend(AnthropicOptions(model="claude-sonnet-4"))


# -- the run's budget -------------------------------------------------------------------


def test_the_cost_budget_stops_calls_once_spent(tmp_path):
    usage = {"input_tokens": 100_000, "output_tokens": 10_000}
    with AnthropicServer([Reply(texts=["a"], usage=usage), "never"]) as srv:
        backend = make(srv, price_per_mtok_input=3.0, price_per_mtok_output=15.0)
        llm = RecordedLLM(backend, "anthropic", RunStore(tmp_path / "run", create=True),
                          Budget(max_cost_usd=0.40))
        _, response = llm.complete(ask(), {"task": "t", "lineage": 0, "iteration": 0, "purpose": "generate"})
        assert response.cost_usd == pytest.approx(0.45)
        with pytest.raises(BudgetExhausted, match="cost budget of \\$0.4 reached"):
            llm.complete(ask(), {"task": "t", "lineage": 0, "iteration": 1, "purpose": "generate"})
    assert len(srv.requests) == 1


# -- registration, recipe, CLI --------------------------------------------------------------


def test_backend_is_registered_under_anthropic():
    spec = PluginManager().spec("llm_backend", "anthropic")
    assert spec.options is AnthropicOptions
    with AnthropicServer() as srv:
        assert spec.build(AnthropicOptions(model="m", base_url=srv.base_url)).identity()["model"] == "m"


def test_plugins_command_lists_the_distribution_without_errors():
    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0
    rows = [r for r in json.loads(result.output) if r["distribution"] == "geak-llm-anthropic"]
    assert rows and [r["error"] for r in rows] == [None] * len(rows)


def test_doctor_names_the_key_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output)["backends"]["anthropic"] == "ANTHROPIC_API_KEY not set"


def test_example_recipe_llm_section_builds_its_backend(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    llm = dict(tomllib.loads(RECIPE.read_text())["llm"])
    assert llm.pop("backend") == "anthropic"
    backend = AnthropicBackend(AnthropicOptions(**llm))
    assert backend.identity() == {"provider": "anthropic", "base_url": "https://api.anthropic.com",
                                  "model": llm["model"]}
    assert backend.price is not None


def test_recipe_check_passes_with_the_key_and_names_the_variable_without_it(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert CliRunner().invoke(main, ["recipe", "check", str(RECIPE)]).exit_code == 0
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert result.exit_code == 2
    assert "[llm.api_key_env] environment variable ANTHROPIC_API_KEY is not set" in result.output



def test_recipe_check_refuses_a_temperature_the_api_refuses_while_thinking(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[llm]\nbackend = "anthropic"\nmodel = "claude-sonnet-4-5"\n'
                      "temperature = 0.2\nthinking_budget_tokens = 4096\n")
    result = CliRunner().invoke(main, ["recipe", "check", "--no-env", str(recipe)])
    assert result.exit_code == 2
    assert "[llm] invalid options: with thinking_budget_tokens set, temperature must be 1 or unset" in result.output

# -- a whole run through the server ------------------------------------------------------------

DRAFT = "A first idea, abandoned:\n```python\n" + ADD_OK.split("```python\n")[1].replace(" + tl.load(y", " - tl.load(y")


def test_a_scripted_run_ends_with_the_calls_tokens_and_cost_in_summary_json(tmp_path):
    reply = message_body([thinking_block(DRAFT), text_block(ADD_OK)])
    with AnthropicServer([Reply(json=reply)], api_key=KEY, cache=True) as srv:
        recipe_file = tmp_path / "recipe.toml"
        recipe_file.write_text(textwrap.dedent(f"""
            [run]
            name = "anthropic-run"
            output_dir = "{tmp_path / 'runs'}"

            [llm]
            backend = "anthropic"
            model = "claude-sonnet-4-5"
            base_url = "{srv.base_url}"
            api_key_env = "TEST_ANTHROPIC_KEY"
            thinking_budget_tokens = 2048
            prompt_cache = true
            max_retries = 0
            price_per_mtok_input = 3.0
            price_per_mtok_output = 15.0

            [suite]
            name = "rocm"
            tasks = ["test_add_kernel"]

            [optimizer]
            name = "none"

            [agent]
            iterations = 1
            lineages = 1
        """))
        plugins = PluginManager()
        recipe = load_recipe(recipe_file, plugins)
        summary = run_recipe(recipe, plugins, echo=lambda line: None)
    assert summary.status == "finished" and summary.execution_accuracy == 1.0
    (usage,) = srv.usages
    assert usage["cache_creation_input_tokens"] > 0
    prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    store = RunStore(tmp_path / "runs" / summary.run_id)
    written = json.loads((store.dir / "summary.json").read_text())
    assert written["llm_calls"] == 1
    assert written["tokens"] == prompt + usage["output_tokens"]
    assert written["cost_usd"] == pytest.approx(cost(usage, 3.0, 15.0))
    (candidate,) = store.candidates()
    assert "tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr" in candidate.code  # not the draft's "-"
    (call,) = store.llm_calls()
    assert call["response"]["texts"] == [ADD_OK]
    assert call["response"]["raw"][0]["content"][0] == thinking_block(DRAFT)
    assert srv.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
