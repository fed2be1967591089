"""Streamed model output: ``OpenAIProvider.stream`` through the real openai client.

The fake server streams as OpenAI does (server-sent chunks); the provider must answer
exactly as ``complete`` does, hand the text over piece by piece, and fail like it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from temporalio.exceptions import ApplicationError

from smyth_temporal.models import (
    ModelRequest,
    ModelResponse,
    OpenAIProvider,
    StreamingModelProvider,
    to_application_error,
)
from smyth_temporal.models._openai import StructuredOutput, _with_openai_errors
from smyth_temporal.testing import (
    FakeOpenAIServer,
    FakeResponse,
    ScriptedModel,
    chat_completion,
    error_response,
    reply,
    text_pieces,
    tool_call,
)
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import OutputSchema

TEXT = "The quote for ACME is 101.5, up 2% today.\n\nShall I  place an order?"
CALLS: list[tuple[str, str, dict[str, Any] | str]] = [
    ("call_a", "get_quote", {"symbol": "ACME", "exchange": "NYSE"}),
    ("call_b", "place_order", {"symbol": "ACME", "quantity": 10, "side": "buy"}),
]
VERDICT = OutputSchema(
    name="Verdict",
    json_schema={
        "type": "object",
        "properties": {"symbol": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["symbol", "confidence"],
    },
)
COUNT = OutputSchema(name="int", json_schema={"type": "integer"})


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def provider(
    fake: FakeOpenAIServer, structured_output: StructuredOutput = "json_schema"
) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=fake.base_url, api_key="sk-test", structured_output=structured_output
    )


def request(output: OutputSchema | None = None) -> ModelRequest:
    return ModelRequest(
        model="test-model",
        messages=[Message.system("You trade."), Message.user("How is ACME?")],
        tools=[{"type": "function", "function": {"name": "get_quote", "parameters": {}}}],
        step=3,
        output=output,
    )


async def stream(
    model: StreamingModelProvider, req: ModelRequest
) -> tuple[ModelResponse, list[str]]:
    pieces: list[str] = []
    response = await model.stream(req, pieces.append)
    return response, pieces


async def streamed_and_completed(
    fake: FakeOpenAIServer, response: FakeResponse, model: OpenAIProvider, req: ModelRequest
) -> tuple[ModelResponse, list[str], ModelResponse]:
    """The same scripted answer, asked for streamed and then not."""
    fake.enqueue(response, response)
    streamed, pieces = await stream(model, req)
    completed = await model.complete(req)
    return streamed, pieces, completed


# -- answers as complete does ----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        chat_completion(TEXT),
        chat_completion(tool_calls=CALLS),
        chat_completion(TEXT, tool_calls=CALLS),
        chat_completion(tool_calls=[("call_x", "broken", '{"symbol": "AC'), ("", "no_id", "")]),
    ],
    ids=["text", "tool-calls", "text-and-tool-calls", "malformed-arguments-and-no-id"],
)
async def test_the_streamed_answer_is_the_completed_one(
    fake: FakeOpenAIServer, body: dict[str, Any]
) -> None:
    streamed, pieces, completed = await streamed_and_completed(
        fake, FakeResponse(body=body), provider(fake), request()
    )

    assert streamed == completed
    assert "".join(pieces) == (completed.message.content or "")
    assert [r.streamed for r in fake.requests] == [True, False]
    assert fake.requests[0].json["stream_options"] == {"include_usage": True}
    # Everything but the streaming switch is the request complete sends.
    streamed_json = {k: v for k, v in fake.requests[0].json.items() if "stream" not in k}
    assert streamed_json == fake.requests[1].json


async def test_text_arrives_in_pieces_that_make_the_content(fake: FakeOpenAIServer) -> None:
    fake.enqueue(chat_completion(TEXT, prompt_tokens=31, completion_tokens=17, model="m-2"))
    response, pieces = await stream(provider(fake), request())

    assert pieces == text_pieces(TEXT)
    assert len(pieces) > 5
    assert "".join(pieces) == response.message.content == TEXT
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 17)
    assert response.usage.requests == 1
    assert (response.finish_reason, response.model, response.message.step) == ("stop", "m-2", 3)


async def test_tool_call_pieces_become_the_calls_and_never_reach_the_text(
    fake: FakeOpenAIServer,
) -> None:
    fake.enqueue(FakeResponse(body=chat_completion(tool_calls=CALLS), piece_chars=3))
    response, pieces = await stream(provider(fake), request())

    assert pieces == []
    assert response.message.content is None
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.message.tool_calls] == [
        (call_id, name, arguments) for call_id, name, arguments in CALLS
    ]
    assert response.finish_reason == "tool_calls"


async def test_a_length_finish_is_reported_not_raised(fake: FakeOpenAIServer) -> None:
    body = chat_completion("cut off mid")
    body["choices"][0]["finish_reason"] = "length"
    streamed, pieces, completed = await streamed_and_completed(
        fake, FakeResponse(body=body), provider(fake), request()
    )
    assert streamed == completed
    assert streamed.finish_reason == "length"
    assert "".join(pieces) == "cut off mid"


async def test_a_first_token_delay_still_answers(fake: FakeOpenAIServer) -> None:
    fake.enqueue(FakeResponse(body=chat_completion("late but whole"), first_token_delay=0.2))
    response, pieces = await stream(provider(fake), request())
    assert "".join(pieces) == response.message.content == "late but whole"


# -- typed answers ---------------------------------------------------------------------


async def test_json_schema_output_streams_the_json(fake: FakeOpenAIServer) -> None:
    answer = json.dumps({"symbol": "ACME", "confidence": 0.8})
    streamed, pieces, completed = await streamed_and_completed(
        fake,
        FakeResponse(body=chat_completion(answer), piece_chars=4),
        provider(fake),
        request(VERDICT),
    )

    assert streamed == completed
    assert len(pieces) > 1
    assert "".join(pieces) == streamed.message.content == answer
    assert fake.requests[0].json["response_format"]["json_schema"]["name"] == "Verdict"


@pytest.mark.parametrize(
    ("output", "arguments", "content"),
    [
        (VERDICT, {"symbol": "ACME", "confidence": 0.8}, '{"symbol": "ACME", "confidence": 0.8}'),
        (COUNT, {"value": 42}, "42"),
    ],
    ids=["object", "primitive"],
)
async def test_final_answer_tool_output_is_handed_over_whole(
    fake: FakeOpenAIServer, output: OutputSchema, arguments: dict[str, Any], content: str
) -> None:
    body = chat_completion("Here it is.", tool_calls=[("call_f", "final_answer", arguments)])
    streamed, pieces, completed = await streamed_and_completed(
        fake, FakeResponse(body=body), provider(fake, "tool"), request(output)
    )

    assert streamed == completed
    assert streamed.message.content == content
    assert streamed.message.tool_calls == []
    # The answer replaced the text, so the text was held back and the answer sent once.
    assert pieces == [content]
    tools = {t["function"]["name"] for t in fake.requests[0].json["tools"]}
    assert "final_answer" in tools


async def test_text_without_a_final_answer_is_still_handed_over(fake: FakeOpenAIServer) -> None:
    fake.enqueue(chat_completion("I need more data."))
    response, pieces = await stream(provider(fake, "tool"), request(VERDICT))
    assert pieces == ["I need more data."]
    assert response.message.content == "I need more data."


# -- failures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drop_after", "body"),
    [
        (0, chat_completion(TEXT)),
        (3, chat_completion(TEXT)),
        (2, chat_completion(tool_calls=CALLS)),
    ],
    ids=["before-any-text", "midway-through-text", "midway-through-tool-calls"],
)
async def test_a_stream_cut_off_midway_is_retryable_and_the_next_call_succeeds(
    fake: FakeOpenAIServer, drop_after: int, body: dict[str, Any]
) -> None:
    model = provider(fake)
    fake.enqueue(FakeResponse(body=body, drop_after=drop_after), chat_completion("recovered"))
    pieces: list[str] = []
    with pytest.raises(ApplicationError) as failed:
        await model.stream(request(), pieces.append)

    assert not failed.value.non_retryable
    assert failed.value.type == "ModelConnectionError"
    assert "".join(pieces) == "".join(
        text_pieces(body["choices"][0]["message"]["content"] or "")[:drop_after]
    )
    response, retried = await stream(model, request())
    assert "".join(retried) == response.message.content == "recovered"


@pytest.mark.parametrize(
    "error",
    [
        error_response(400, "Invalid value for 'model'", code="model_not_found"),
        error_response(401, "Incorrect API key provided"),
        error_response(429, "Rate limit reached", retry_after=2),
        error_response(503, "The engine is overloaded"),
    ],
    ids=["400", "401", "429", "503"],
)
async def test_error_statuses_raise_what_complete_raises(
    fake: FakeOpenAIServer, error: FakeResponse
) -> None:
    model = provider(fake)
    fake.enqueue(error, error)
    with pytest.raises(ApplicationError) as streamed:
        await stream(model, request())
    with pytest.raises(ApplicationError) as completed:
        await model.complete(request())

    def seen(exc: ApplicationError) -> tuple[object, ...]:
        return (exc.type, exc.non_retryable, exc.message, exc.next_retry_delay, exc.details)

    assert seen(streamed.value) == seen(completed.value)
    assert streamed.value.type == "ModelHTTPError"
    assert streamed.value.non_retryable == (error.status in (400, 401))


async def test_a_timeout_while_streaming_is_retryable(fake: FakeOpenAIServer) -> None:
    model = OpenAIProvider(base_url=fake.base_url, api_key="sk-test", timeout=0.3)
    fake.enqueue(FakeResponse(body=chat_completion(TEXT), first_token_delay=5.0))
    with pytest.raises(ApplicationError) as failed:
        await stream(model, request())
    assert not failed.value.non_retryable
    assert failed.value.type == "ModelTimeout"


class _BrokenStream:
    """A stream whose connection fails after one chunk, as httpx reports it."""

    def __init__(self, error: httpx.TransportError) -> None:
        self.response = httpx.Response(200, request=httpx.Request("POST", "http://model/v1"))
        self._error = error

    async def __aiter__(self) -> AsyncIterator[str]:
        yield "chunk"
        raise self._error


@pytest.mark.parametrize(
    ("error", "raised", "kind"),
    [
        (
            httpx.RemoteProtocolError("peer closed connection"),
            openai.APIConnectionError,
            "ModelConnectionError",
        ),
        (httpx.ReadError("connection reset"), openai.APIConnectionError, "ModelConnectionError"),
        (httpx.ReadTimeout("timed out"), openai.APITimeoutError, "ModelTimeout"),
    ],
)
async def test_raw_transport_errors_of_older_openai_versions_are_classified(
    error: httpx.TransportError, raised: type[openai.APIConnectionError], kind: str
) -> None:
    # openai < 3 lets httpx's errors out of a stream unwrapped; openai 3 wraps them.
    chunks: list[object] = []
    with pytest.raises(raised) as caught:
        async for chunk in _with_openai_errors(_BrokenStream(error)):  # type: ignore[arg-type]
            chunks.append(chunk)

    assert chunks == ["chunk"]
    assert caught.value.__cause__ is error
    classified = to_application_error(caught.value)
    assert (classified.type, classified.non_retryable) == (kind, False)


# -- the fake server's stream ----------------------------------------------------------


async def test_the_fake_streams_chunks_as_openai_does(fake: FakeOpenAIServer) -> None:
    fake.enqueue(
        FakeResponse(body=chat_completion("Hi there", tool_calls=CALLS[:1]), piece_chars=10)
    )
    async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as api:
        stream = await api.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]

    first, *middle, finish, usage = chunks
    assert first.choices[0].delta.role == "assistant"
    assert [c.choices[0].delta.content for c in middle if c.choices[0].delta.content] == [
        "Hi there"
    ]
    calls = [d for c in middle for d in c.choices[0].delta.tool_calls or []]
    assert (calls[0].id, calls[0].function and calls[0].function.name) == ("call_a", "get_quote")
    assert all(d.id is None and d.index == 0 for d in calls[1:])
    assert len(calls) > 2  # the arguments came in several pieces
    assert "".join((d.function and d.function.arguments) or "" for d in calls) == json.dumps(
        CALLS[0][2]
    )
    assert finish.choices[0].finish_reason == "tool_calls"
    assert usage.choices == []
    assert usage.usage is not None and usage.usage.total_tokens == 15
    assert all(c.usage is None for c in chunks[:-1])
    assert all(c.object == "chat.completion.chunk" for c in chunks)


async def test_the_fake_streams_no_usage_unless_asked(fake: FakeOpenAIServer) -> None:
    fake.enqueue(chat_completion("plain"))
    async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as api:
        stream = await api.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    assert all(c.choices and c.usage is None for c in chunks)
    assert fake.requests[0].streamed


async def test_streaming_options_leave_a_plain_request_alone(fake: FakeOpenAIServer) -> None:
    fake.enqueue(FakeResponse(body=chat_completion("whole"), drop_after=0, first_token_delay=5))
    response = await provider(fake).complete(request())
    assert response.message.content == "whole"
    assert not fake.requests[0].streamed


@pytest.mark.parametrize(
    ("text", "size", "pieces"),
    [
        ("one two  three\n", None, ["one ", "two  ", "three\n"]),
        ("  lead", None, ["  ", "lead"]),
        ("", None, []),
        ("abcdefg", 3, ["abc", "def", "g"]),
    ],
)
def test_text_pieces_join_back_to_the_text(text: str, size: int | None, pieces: list[str]) -> None:
    assert text_pieces(text, size) == pieces
    assert "".join(pieces) == text


def test_text_pieces_refuse_a_size_below_one() -> None:
    with pytest.raises(ValueError, match="positive"):
        text_pieces("x", 0)


# -- the scripted model ----------------------------------------------------------------


async def test_the_scripted_model_streams_its_replies() -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(TEXT)], piece_delay=0.001)
    assert isinstance(model, StreamingModelProvider)
    assert isinstance(OpenAIProvider(api_key="k"), StreamingModelProvider)

    first, first_pieces = await stream(model, request().model_copy(update={"step": 1}))
    second, second_pieces = await stream(model, request().model_copy(update={"step": 2}))

    assert first_pieces == []
    assert first.message.tool_calls[0].name == "get_quote"
    assert second_pieces == text_pieces(TEXT)
    assert "".join(second_pieces) == second.message.content == TEXT
    assert second == await model.complete(request().model_copy(update={"step": 2}))
