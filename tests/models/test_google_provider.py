"""The Google provider through the real ``google-genai`` SDK against the fake Gemini API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from google import genai
from google.oauth2.credentials import Credentials
from temporalio.exceptions import ApplicationError

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.models import default_provider
from smyth_temporal.models._anthropic import AnthropicProvider
from smyth_temporal.models._google import GEMINI_PART, GoogleProvider
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import FakeGoogleServer, GoogleTurn, google_error, google_turn
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest, OutputSchema, is_overloaded
from tests.helpers.provider_requests import QUOTE_TOOL, quote_request

INSTRUCTIONS = "You analyse markets. " * 40
THOUGHTS: dict[str, Any] = {"thinking_config": {"include_thoughts": True}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeGoogleServer]:
    async with FakeGoogleServer(context_window=5_000, min_cache_tokens=100) as server:
        yield server


@pytest.fixture
def provider(fake: FakeGoogleServer) -> GoogleProvider:
    return GoogleProvider(base_url=fake.base_url, api_key="gemini-test-key")


def request(*messages: Message, step: int = 0, **settings: Any) -> ModelRequest:
    return quote_request("gemini-test", INSTRUCTIONS, *messages, step=step, settings=settings)


def generate_calls(fake: FakeGoogleServer) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests if "cachedContents" not in r.path]


async def test_function_calls_and_usage_with_implicit_cache_reads(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_turn(function_calls=[("get_quote", {"symbol": "ACME"}), ("add_note", {})]))
    first = await provider.complete(request())
    fake.enqueue(google_turn("ACME trades at 42."))
    quote, note = first.message.tool_calls
    second = await provider.complete(
        request(
            first.message,
            Message.tool_result(quote, "42.0"),
            Message.tool_result(note, "noted"),
            step=1,
        )
    )

    assert [(c.name, json.loads(c.arguments)) for c in first.message.tool_calls] == [
        ("get_quote", {"symbol": "ACME"}),
        ("add_note", {}),
    ]
    assert (first.finish_reason, second.message.content) == ("tool_calls", "ACME trades at 42.")
    [one, two] = fake.reports
    assert (first.usage.input_tokens, first.usage.cached_tokens) == (one.prompt_tokens, 0)
    # The second prompt starts with the first: Gemini served that much from its cache.
    assert second.usage.cached_tokens == two.cache_read_input_tokens == one.prompt_tokens
    assert second.usage.input_tokens == two.prompt_tokens
    # Both results in one user turn, in order, each with the id its call went back with.
    sent = fake.requests[1].json["contents"]
    calls = [p["functionCall"] for p in sent[1]["parts"]]
    assert [(c["id"], c["name"]) for c in calls] == [
        ("call_0_0", "get_quote"),
        ("call_0_1", "add_note"),
    ]
    assert sent[2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "call_0_0",
                    "name": "get_quote",
                    "response": {"output": "42.0"},
                }
            },
            {
                "functionResponse": {
                    "id": "call_0_1",
                    "name": "add_note",
                    "response": {"output": "noted"},
                }
            },
        ],
    }


async def test_streamed_text_concatenates_to_the_answer(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_turn("ACME is up three percent today."))
    pieces: list[str] = []
    response = await provider.stream(request(), pieces.append)

    assert fake.requests[0].path.endswith(":streamGenerateContent?alt=sse")
    assert len(pieces) > 1
    assert "".join(pieces) == response.message.content == "ACME is up three percent today."
    assert (response.usage.input_tokens, response.finish_reason) == (
        fake.reports[0].prompt_tokens,
        "stop",
    )


@pytest.mark.parametrize("streamed", [False, True])
async def test_thought_signatures_go_back_unchanged_in_their_parts(
    fake: FakeGoogleServer, provider: GoogleProvider, streamed: bool
) -> None:
    fake.enqueue(
        google_turn(
            "Looking it up.",
            [("get_quote", {"symbol": "ACME"})],
            thinking="The user wants a quote; call get_quote.",
        ),
        google_turn("42."),
    )
    pieces: list[str] = []
    first = (
        await provider.stream(request(**THOUGHTS), pieces.append)
        if streamed
        else await provider.complete(request(**THOUGHTS))
    )
    call = first.message.tool_calls[0]
    await provider.complete(
        request(first.message, Message.tool_result(call, "42.0"), step=1, **THOUGHTS)
    )

    # The thought summary is kept, never shown as the answer or streamed as its text.
    assert first.message.content == "Looking it up."
    assert "".join(pieces) == ("Looking it up." if streamed else "")
    parts = [item["part"] for item in first.message.provider_items]
    assert {item["type"] for item in first.message.provider_items} == {GEMINI_PART}
    assert parts[0] == {"text": "The user wants a quote; call get_quote.", "thought": True}
    signed = {"functionCall": {"name": "get_quote", "args": {"symbol": "ACME"}}}
    # The model turn went back part for part; the fake refuses a missing or altered
    # signature with a 400, and answered.
    model_turn = fake.requests[1].json["contents"][1]
    assert model_turn["role"] == "model"
    assert [p.get("text") for p in model_turn["parts"][:2]] == [parts[0]["text"], "Looking it up."]
    assert model_turn["parts"][2]["functionCall"] == signed["functionCall"]
    assert model_turn["parts"][2]["thoughtSignature"]
    assert len(fake.reports) == 2


async def test_a_signed_turn_sent_back_without_its_signature_is_refused_as_final(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_turn(function_calls=[("get_quote", {"symbol": "ACME"})], thinking="t"))
    first = await provider.complete(request())
    stripped = first.message.model_copy(update={"provider_items": []})
    call = first.message.tool_calls[0]
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(stripped, Message.tool_result(call, "42.0"), step=1))
    assert raised.value.non_retryable
    assert "thought_signature" in str(raised.value)


async def test_a_429_asks_temporal_to_wait_its_retry_info_delay_capped(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(
        google_error(429, "Resource has been exhausted (e.g. check quota).", retry_delay=7.5),
        google_error(429, "Quota exceeded.", retry_delay=86_400),
    )
    delays = []
    for _ in range(2):
        with pytest.raises(ApplicationError) as raised:
            await provider.complete(request())
        error = raised.value
        assert (error.type, error.non_retryable) == ("ModelHTTPError", False)
        delays.append(error.next_retry_delay)
    # A day-long hint (a hostile or buggy endpoint) would park the activity: capped.
    assert delays == [timedelta(seconds=7.5), timedelta(minutes=5)]
    # The SDK's own retries are off: one request per call, Temporal retries.
    assert len(fake.requests) == 2


async def test_an_unavailable_model_is_retryable_as_model_overloaded(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_error(503, "The model is overloaded. Please try again later."))
    with pytest.raises(ApplicationError) as raised:
        await provider.stream(request(), lambda _: None)
    assert (raised.value.type, raised.value.non_retryable) == ("ModelOverloaded", False)
    assert len(fake.requests) == 1


async def test_a_prompt_over_the_context_window_is_final_context_too_long(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(Message.user("x" * 40_000)))
    assert (raised.value.type, raised.value.non_retryable) == ("ModelContextTooLong", True)
    assert "exceeds the maximum number of tokens" in str(raised.value)


async def test_a_bad_request_is_final_and_a_setting_the_sdk_does_not_know_too(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_error(400, "Invalid value at 'generation_config.temperature'"))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request())
    assert (raised.value.type, raised.value.non_retryable) == ("ModelHTTPError", True)
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request(no_such_setting=1))
    assert (raised.value.type, raised.value.non_retryable) == ("ModelRequestInvalid", True)
    assert len(fake.requests) == 1  # refused before it was sent


async def test_settings_and_a_typed_answer_use_geminis_own_fields(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_turn('{"price": 42.0}'))
    typed = request(max_tokens=200, temperature=0.0).model_copy(
        update={"output": OutputSchema(name="Quote", json_schema={"type": "object"})}
    )
    response = await provider.complete(typed)
    config = fake.requests[0].json["generationConfig"]
    assert config["maxOutputTokens"] == 200
    assert config["temperature"] == 0.0
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == {"type": "object"}
    assert response.message.content == '{"price": 42.0}'


def test_the_prompt_prefix_is_byte_identical_from_step_to_step() -> None:
    provider = GoogleProvider(api_key="gemini-test-key")
    call = ToolCall(id="call_0_0", name="get_quote", arguments='{"symbol": "ACME"}')
    turn = Message(role="assistant", tool_calls=[call])
    first = provider.params(request())
    later = provider.params(request(turn, Message.tool_result(call, "42.0"), step=1))

    assert json.dumps(first["config"]) == json.dumps(later["config"])
    assert json.dumps(first["contents"]) == json.dumps(later["contents"][:1])
    [tool] = later["config"]["tools"]
    assert [d["name"] for d in tool["function_declarations"]] == ["add_note", "get_quote"]


async def test_the_explicit_cache_holds_the_stable_prefix_until_the_next_summary(
    fake: FakeGoogleServer,
) -> None:
    provider = GoogleProvider(base_url=fake.base_url, api_key="k", context_cache=True)
    task = Message.user("Watch ACME all day.")
    summary_1 = Message(role="system", content="Summary: ACME was 40, then 41.", compaction="c1")
    summary_2 = Message(role="system", content="Summary: 40, 41, then 42.", compaction="c2")
    steps = [
        [task, summary_1, Message.user("And now?")],
        [task, summary_1, Message.user("And now?"), Message(role="assistant", content="41.")],
        [task, summary_1, Message.user("Any news?")],
        [task, summary_2, Message.user("And now?")],
    ]
    fake.enqueue(*(google_turn("ok") for _ in steps))
    usages = []
    for conversation in steps:
        messages = [Message.system(INSTRUCTIONS), *conversation, Message.user("go")]
        answer = await provider.complete(
            ModelRequest(model="gemini-test", messages=messages, tools=[QUOTE_TOOL])
        )
        usages.append(answer.usage)

    creates = [r.json for r in fake.requests if r.path.endswith("/cachedContents")]
    # One cache per summary: instructions, tools, the task and the summary.
    assert len(creates) == 2 == len(fake.caches)
    assert creates[0]["systemInstruction"]["parts"][0]["text"] == INSTRUCTIONS
    assert creates[0]["contents"][0]["parts"][-1]["text"] == f"[system] {summary_1.content}"
    calls = generate_calls(fake)
    # The requests name the cache and send only what follows the summary.
    assert [c["cachedContent"] for c in calls[:3]] == [calls[0]["cachedContent"]] * 3
    assert calls[3]["cachedContent"] != calls[0]["cachedContent"]
    assert all("systemInstruction" not in c and "tools" not in c for c in calls)
    assert calls[0]["contents"][0]["parts"] == [{"text": "And now?"}, {"text": "go"}]
    reports = fake.reports
    assert [u.cached_tokens for u in usages] == [r.cache_read_input_tokens for r in reports]
    assert usages[0].cached_tokens == usages[1].cached_tokens == usages[2].cached_tokens > 0


async def test_a_prefix_too_small_to_cache_is_sent_whole_and_not_offered_again(
    fake: FakeGoogleServer,
) -> None:
    provider = GoogleProvider(base_url=fake.base_url, api_key="k", context_cache=True)
    fake.enqueue(google_turn("a"), google_turn("b"))
    small = [Message.system("Be brief."), Message.user("Hi")]
    for _ in range(2):
        await provider.complete(ModelRequest(model="gemini-test", messages=small))
    paths = [r.path.rsplit("/", 1)[-1] for r in fake.requests]
    assert paths == ["cachedContents", "gemini-test:generateContent"] * 1 + [
        "gemini-test:generateContent"
    ]
    assert generate_calls(fake)[1]["systemInstruction"] == {"parts": [{"text": "Be brief."}]}


async def test_a_cache_gone_before_its_time_fails_retryable_and_is_made_again(
    fake: FakeGoogleServer,
) -> None:
    provider = GoogleProvider(base_url=fake.base_url, api_key="k", context_cache=True)
    fake.enqueue(google_turn("a"), google_turn("b"))
    turn = request()
    await provider.complete(turn)
    [name] = fake.caches
    fake._cache_entry("DELETE", name)  # deleted by someone else, or expired early
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(turn)
    gone = raised.value
    # Retried on the same model: a lost cache is not an overloaded model to fall back from.
    assert (gone.type, gone.non_retryable) == ("ModelCacheMissing", False)
    assert not is_overloaded(gone.type, gone.details)
    answer = await provider.complete(turn)  # Temporal's retry: a new cache
    assert answer.message.content == "b"
    assert len(fake.caches) == 1 and name not in fake.caches
    # A key refused while a cache is named is still final, and the cache is kept.
    fake.enqueue(google_error(403, "Permission denied: API key not valid."))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(turn)
    assert (raised.value.type, raised.value.non_retryable) == ("ModelHTTPError", True)
    assert [r.path.endswith("/cachedContents") for r in fake.requests].count(True) == 2


def test_without_the_extra_the_import_names_the_install_command() -> None:
    code = (
        "import sys; sys.modules['google.genai'] = None\n"
        "try:\n    import smyth_temporal.models._google\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'smyth-temporal[google]'" in out.stdout


def test_without_a_key_the_provider_says_which_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(Exception, match="GOOGLE_API_KEY"):
        GoogleProvider()
    monkeypatch.setenv("GEMINI_API_KEY", "from-the-sdks-other-variable")
    assert ModelSettings.load().gemini_api_key is not None
    GoogleProvider()


async def test_a_real_key_quoted_in_an_error_is_masked(fake: FakeGoogleServer) -> None:
    key = "AIzaSyA-abcdefghijklmnopqrstuvwxyz012"
    provider = GoogleProvider(base_url=fake.base_url, api_key=key)
    fake.enqueue(google_error(400, f"API key not valid: {key}"))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request())
    assert key not in str(raised.value) and "abcdefghijklmnop" not in str(raised.value)


def test_the_default_provider_serves_google_names_with_the_workers_key() -> None:
    # A worker with only a Gemini key starts: the OpenAI-compatible provider waits for
    # a bare name to be asked for.
    settings = ModelSettings.load(gemini_api_key="gemini-worker-key", openai_api_key=None)
    routes = default_provider(settings)
    provider, name = routes.resolve("google:gemini-2.5-pro")
    assert (type(provider), name) == (GoogleProvider, "gemini-2.5-pro")


async def test_vertex_ai_goes_through_the_same_sdk_with_the_workers_credentials(
    fake: FakeGoogleServer,
) -> None:
    client = genai.Client(
        vertexai=True,
        project="trading",
        location="europe-west4",
        credentials=Credentials(token="vertex-test-token"),  # type: ignore[no-untyped-call]
        http_options={"base_url": fake.base_url, "retry_options": {"attempts": 1}},
    )
    provider = GoogleProvider(client=client, context_cache=True)
    fake.enqueue(google_turn("Quoted through Vertex."))
    pieces: list[str] = []
    answer = await provider.stream(request(), pieces.append)

    assert "".join(pieces) == answer.message.content == "Quoted through Vertex."
    place = "/projects/trading/locations/europe-west4/"
    [create, generate] = fake.requests
    assert place in create.path and create.path.endswith("/cachedContents")
    assert place + "publishers/google/models/gemini-test:streamGenerateContent" in generate.path
    assert generate.headers["authorization"] == "Bearer vertex-test-token"
    assert "x-goog-api-key" not in generate.headers
    assert answer.usage.cached_tokens == fake.reports[0].cache_read_input_tokens > 0


def test_each_provider_sends_back_only_its_own_items() -> None:
    """A turn may move between providers (fallback models): neither sends the other's."""
    call = ToolCall(id="call_0_0", name="get_quote", arguments='{"symbol": "ACME"}')
    claude = Message(
        role="assistant",
        tool_calls=[call],
        provider_items=[{"type": "thinking", "thinking": "t", "signature": "anthropic-sig"}],
    )
    gemini = Message(
        role="assistant",
        tool_calls=[call],
        provider_items=[
            {
                "type": GEMINI_PART,
                "part": {
                    "function_call": {"name": "get_quote", "args": {"symbol": "ACME"}},
                    "thought_signature": "c2ln",
                },
            }
        ],
    )
    to_gemini = GoogleProvider(api_key="k").params(
        request(claude, Message.tool_result(call, "42.0"))
    )
    to_claude = AnthropicProvider(api_key="sk-ant-test-key").params(
        request(gemini, Message.tool_result(call, "42.0"))
    )

    assert "anthropic-sig" not in json.dumps(to_gemini)
    assert to_gemini["contents"][1]["parts"] == [
        {"function_call": {"id": "call_0_0", "name": "get_quote", "args": {"symbol": "ACME"}}}
    ]
    assert "c2ln" not in json.dumps(to_claude) and GEMINI_PART not in json.dumps(to_claude)


def test_a_signed_message_whose_calls_changed_is_rebuilt_not_sent_stale() -> None:
    call = ToolCall(id="call_0_0", name="add_note", arguments="{}")
    signed_two = [
        {"type": GEMINI_PART, "part": {"function_call": {"name": n, "args": {}}}}
        for n in ("get_quote", "add_note")
    ]
    edited = Message(role="assistant", tool_calls=[call], provider_items=signed_two)
    params = GoogleProvider(api_key="k").params(request(edited))
    assert params["contents"][1]["parts"] == [
        {"function_call": {"id": "call_0_0", "name": "add_note", "args": {}}}
    ]


async def test_a_stream_cut_midway_is_retryable_and_its_retry_answers_whole(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    cut = google_turn("ACME is up three percent today.")
    fake.enqueue(
        GoogleTurn(parts=cut.parts, drop_after=2), google_turn("ACME is up three percent today.")
    )
    pieces: list[str] = []
    with pytest.raises(ApplicationError) as raised:
        await provider.stream(request(), pieces.append)
    assert (raised.value.type, raised.value.non_retryable) == ("ModelConnectionError", False)
    assert pieces == ["ACME ", "is "]  # what the activity's retry supersedes
    retried: list[str] = []
    answer = await provider.stream(request(), retried.append)
    assert "".join(retried) == answer.message.content == "ACME is up three percent today."


async def test_a_function_call_gemini_could_not_write_is_retried_not_an_empty_answer(
    fake: FakeGoogleServer, provider: GoogleProvider
) -> None:
    fake.enqueue(google_turn(finish_reason="MALFORMED_FUNCTION_CALL"))
    with pytest.raises(ApplicationError) as raised:
        await provider.complete(request())
    assert (raised.value.type, raised.value.non_retryable) == ("ModelMalformedAnswer", False)


def test_the_gemini_endpoint_variable_never_redirects_vertex_ai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://gemini.example")
    vertex = GoogleProvider(vertexai=True, project="trading", location="europe-west4")
    gemini = GoogleProvider(api_key="gemini-test-key")
    urls = [p._client._api_client._http_options.base_url for p in (vertex, gemini)]
    assert urls == ["https://europe-west4-aiplatform.googleapis.com/", "http://gemini.example"]


def test_a_worker_with_a_google_key_but_not_the_extra_still_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "smyth_temporal.models._google", None)  # not installed
    routes = default_provider(
        ModelSettings.load(google_api_key="a-key-for-other-programs", openai_api_key="sk")
    )
    assert routes.resolve("gpt-4o-mini")[1] == "gpt-4o-mini"
    with pytest.raises(ConfigurationError):
        routes.resolve("google:gemini-2.5-pro")
