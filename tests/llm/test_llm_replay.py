"""The replay backend: strict and sequential replay of recorded runs, and reply scripts."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, Message, Usage
from geak_core.engine.plugins import PluginManager
from geak_core.engine.store import RunStore
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_openai.backend import OpenAIBackend, OpenAIOptions
from geak_llm_replay.backend import ReplayBackend, ReplayOptions

from tests.support.openai_server import OpenAIServer

IDENTITY = {"provider": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-4.1"}
OTHER = {"provider": "gemini", "base_url": "https://generativelanguage.googleapis.com", "model": "gemini-2.5-pro"}


def ask(prompt: str, *, temperature: float | None = 1.0, **meta) -> ChatRequest:
    return ChatRequest([Message("system", "sys"), Message("user", prompt)], temperature=temperature, meta=meta)


def slot(task="rocm/softmax", lineage=0, iteration=0, purpose="generate") -> dict:
    return {"task": task, "lineage": lineage, "iteration": iteration, "purpose": purpose}


def record(store: RunStore, request: ChatRequest, text: str | None, identity=IDENTITY, **meta) -> None:
    request.meta = {**request.meta, **meta}
    response = ChatResponse([text], Usage(10, 5), model=identity["model"]) if text is not None else None
    store.record_llm_call(
        call_id=uuid.uuid4().hex, key=request.key(identity), call_key=None, backend="openai",
        identity=identity, request=request.to_dict(),
        response=response.to_dict() if response else None,
        error=None if response else "RetryableLLMError: boom", latency_s=0.1,
        prompt_tokens=10, completion_tokens=5, cost_usd=0.001, meta=meta,
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "runs" / "r1"
    with RunStore(directory, create=True) as store:
        record(store, ask("write softmax"), "softmax v1", **slot())
        record(store, ask("fix softmax: error X"), "softmax v2", **slot(iteration=1, purpose="reflect"))
        record(store, ask("write add"), None, **slot(task="rocm/add"))
    return directory


def replay(source, mode: str = "strict", **options) -> ReplayBackend:
    return ReplayBackend(ReplayOptions(source=str(source), mode=mode, **options))


# -- strict --------------------------------------------------------------------


def test_strict_replay_serves_the_recorded_reply_for_the_same_request(run_dir):
    backend = replay(run_dir)
    assert backend.complete(ask("fix softmax: error X")).texts == ["softmax v2"]
    assert backend.complete(ask("write softmax")).texts == ["softmax v1"]


def test_strict_replay_reports_the_recorded_identity(run_dir):
    assert replay(run_dir).identity() == IDENTITY


def test_store_file_and_run_directory_are_both_accepted(run_dir):
    assert replay(run_dir / "store.sqlite").complete(ask("write softmax")).texts == ["softmax v1"]


def test_failed_calls_are_not_served(run_dir):
    with pytest.raises(FatalLLMError, match="no recorded reply"):
        replay(run_dir).complete(ask("write add"))


def test_strict_miss_names_the_nearest_request_and_how_it_differs(run_dir):
    with pytest.raises(FatalLLMError) as caught:
        replay(run_dir).complete(ask("write softmax", temperature=0.2, **slot()))
    message = str(caught.value)
    assert "no recorded reply for this request (task=rocm/softmax lineage=0 iteration=0 purpose=generate" in message
    assert "Nearest recorded request" in message
    assert "temperature (recorded 1.0, requested 0.2)" in message


def test_strict_miss_points_at_the_first_differing_character(run_dir):
    with pytest.raises(FatalLLMError, match=r"messages\[1\] \(user\) from character 6: recorded 'softmax', requested 'layernorm'"):
        replay(run_dir).complete(ask("write layernorm"))


def test_identical_requests_get_their_recorded_replies_in_order_then_the_last(tmp_path):
    with RunStore(tmp_path / "r", create=True) as store:
        for text in ("first", "second"):
            record(store, ask("same prompt"), text)
    backend = replay(tmp_path / "r")
    assert [backend.complete(ask("same prompt")).texts[0] for _ in range(3)] == ["first", "second", "second"]


def test_several_identities_need_the_identity_option(tmp_path):
    with RunStore(tmp_path / "r", create=True) as store:
        record(store, ask("p"), "from gpt", identity=IDENTITY)
        record(store, ask("p"), "from gemini", identity=OTHER)
    with pytest.raises(InputError, match="several backends"):
        replay(tmp_path / "r")
    backend = replay(tmp_path / "r", identity="gemini:gemini-2.5-pro")
    assert backend.identity() == OTHER
    assert backend.complete(ask("p")).texts == ["from gemini"]


def test_identity_option_that_matches_nothing_is_an_input_error(run_dir):
    with pytest.raises(InputError, match="matches 0 of the identities"):
        replay(run_dir, identity="claude")


def test_live_calls_recorded_in_a_store_replay_identically(tmp_path):
    requests = [ask(f"prompt {i}", **slot(iteration=i)) for i in range(3)]
    with OpenAIServer([["a0"], ["b1"], ["c2"]]) as srv:
        live = OpenAIBackend(OpenAIOptions(model="m", base_url=srv.base_url), retry=RetryPolicy(sleep=lambda s: None))
        with RunStore(tmp_path / "live", create=True) as store:
            originals = []
            for request in requests:
                response = live.complete(request)
                originals.append(response)
                store.record_llm_call(
                    call_id=uuid.uuid4().hex, key=request.key(live.identity()), call_key=None,
                    backend="openai", identity=live.identity(), request=request.to_dict(),
                    response=response.to_dict(), error=None, latency_s=response.latency_s,
                    prompt_tokens=response.usage.prompt_tokens,
                    completion_tokens=response.usage.completion_tokens, cost_usd=None, meta=request.meta,
                )
    backend = replay(tmp_path / "live")
    assert backend.identity() == live.identity()
    for request, original in zip(reversed(requests), reversed(originals), strict=True):
        assert backend.complete(request).to_dict() == original.to_dict()


# -- JSONL exports -------------------------------------------------------------


def test_jsonl_of_calls_is_replayed(tmp_path):
    request = ask("write softmax")
    lines = [
        {"request": request.to_dict(), "response": {"texts": ["from jsonl"]}, "identity": IDENTITY},
        {"request": ask("broken").to_dict(), "response": None},
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    backend = replay(path)
    assert backend.identity() == IDENTITY
    assert backend.complete(request).texts == ["from jsonl"]


def test_jsonl_without_identity_replays_under_an_empty_identity(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"request": ask("p").to_dict(), "response": {"texts": ["r"]}}) + "\n")
    backend = replay(path)
    assert backend.identity() == {}
    assert backend.complete(ask("p")).texts == ["r"]


def test_bad_jsonl_line_is_an_input_error_naming_the_line(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"request": ask("p").to_dict(), "response": {"texts": ["r"]}}) + "\n{oops\n")
    with pytest.raises(InputError, match=r"calls.jsonl:2: the line is not valid JSON"):
        replay(path)


def test_missing_source_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        replay(tmp_path / "nowhere")


def test_directory_without_a_store_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no store.sqlite"):
        replay(tmp_path)


# -- sequential ----------------------------------------------------------------


def test_sequential_replay_serves_each_group_in_recorded_order(tmp_path):
    with RunStore(tmp_path / "r", create=True) as store:
        record(store, ask("g0"), "gen 0", **slot(iteration=0))
        record(store, ask("r1"), "reflect 1", **slot(iteration=1, purpose="reflect"))
        record(store, ask("g2"), "gen 2", **slot(iteration=2))
    backend = replay(tmp_path / "r", mode="sequential")
    # prompts differ from the recording: only the meta group and order matter
    assert backend.complete(ask("edited", **slot(iteration=0))).texts == ["gen 0"]
    assert backend.complete(ask("edited", **slot(iteration=5))).texts == ["gen 2"]
    assert backend.complete(ask("edited", **slot(purpose="reflect"))).texts == ["reflect 1"]


def test_sequential_replay_running_out_of_a_group_is_fatal(run_dir):
    backend = replay(run_dir, mode="sequential")
    backend.complete(ask("x", **slot()))
    with pytest.raises(FatalLLMError, match="recorded only 1 call"):
        backend.complete(ask("x", **slot()))


def test_sequential_replay_of_an_unrecorded_group_is_fatal(run_dir):
    with pytest.raises(FatalLLMError, match="no recorded calls for task=rocm/gemm"):
        replay(run_dir, mode="sequential").complete(ask("x", **slot(task="rocm/gemm")))


def test_sequence_by_chooses_the_grouping_fields(run_dir):
    backend = replay(run_dir, mode="sequential", sequence_by=["task"])
    texts = [backend.complete(ask("x", **slot(purpose=p))).texts[0] for p in ("anything", "else")]
    assert texts == ["softmax v1", "softmax v2"]


# -- scripted ------------------------------------------------------------------

SCRIPT = '''
[[reply]]
text = "default reply"

[[reply]]
match = { task = "softmax", purpose = "generate" }
texts = ["softmax A", "softmax B"]

[[reply]]
match = { task = "softmax", purpose = "generate", iteration = 3 }
file = "replies/late.py"

[[reply]]
match = { purpose = "reflect", prompt_contains = "IndexError" }
text = "fixed the index"
times = 1
usage = { prompt_tokens = 100, completion_tokens = 20 }
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    (tmp_path / "replies").mkdir()
    (tmp_path / "replies" / "late.py").write_text("late code\n")
    path = tmp_path / "demo.toml"
    path.write_text(SCRIPT)
    return path


def test_script_reply_is_chosen_by_the_most_specific_match(script):
    backend = replay(script, mode="scripted")
    assert backend.complete(ask("p", **slot(iteration=3))).texts == ["late code\n"]
    assert backend.complete(ask("p", **slot(task="rocm/add"))).texts == ["default reply"]


def test_script_task_matches_the_task_key_without_its_suite(script):
    assert replay(script, mode="scripted").complete(ask("p", **slot())).texts == ["softmax A"]


def test_script_texts_are_served_in_turn(script):
    backend = replay(script, mode="scripted")
    first = backend.complete(ask("p", **slot()))
    second = backend.complete(ChatRequest([Message("user", "p")], n=2, meta=slot()))
    assert first.texts == ["softmax A"] and second.texts == ["softmax B", "softmax A"]


def test_script_entry_with_times_is_used_up_then_falls_back(script):
    backend = replay(script, mode="scripted")
    request = ask("Traceback: IndexError: out of range", **slot(purpose="reflect"))
    response = backend.complete(request)
    assert response.texts == ["fixed the index"]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (100, 20)
    assert backend.complete(request).texts == ["default reply"]


def test_script_without_a_matching_entry_is_fatal(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"match": {"purpose": "generate"}, "text": "g"}) + "\n")
    backend = replay(path, mode="scripted")
    assert backend.complete(ask("p", **slot())).texts == ["g"]
    with pytest.raises(FatalLLMError, match="no entry of the script .* matches the request .*purpose=optimize"):
        backend.complete(ask("p", **slot(purpose="optimize")))


def test_script_with_an_unknown_key_is_an_input_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[reply]]\nmatch = {purpose = "generate"}\ntxt = "typo"\n')
    with pytest.raises(InputError, match=r"s.toml: \[\[reply\]\] #1: unknown key\(s\) txt"):
        replay(path, mode="scripted")


def test_script_identity_names_the_script(script):
    assert replay(script, mode="scripted").identity()["model"] == "script:demo.toml"


def test_backend_is_registered_under_replay(script):
    spec = PluginManager().spec("llm_backend", "replay")
    assert spec.options is ReplayOptions
    assert spec.build(ReplayOptions(source=str(script), mode="scripted")).complete(ask("p")).texts == ["default reply"]
