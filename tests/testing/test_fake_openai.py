"""The fake OpenAI server, exercised through the real openai client."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import time
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from smyth_temporal.testing import FakeOpenAIServer, FakeResponse, chat_completion, error_response
from smyth_temporal.testing._fake_openai import fake_embedding

MESSAGES: list[dict[str, str]] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=10
    ) as api:
        yield api


async def _create(api: openai.AsyncOpenAI, **kwargs: object) -> object:
    return await api.chat.completions.create(model="m", messages=MESSAGES, **kwargs)  # type: ignore[call-overload]


def _port_is_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


# -- lifecycle -------------------------------------------------------------------------


def test_base_url_points_at_a_local_ephemeral_port() -> None:
    with FakeOpenAIServer() as fake:
        port = fake.port
        assert port > 0
        assert fake.base_url == f"http://127.0.0.1:{port}/v1"
        assert _port_is_open(port)
    assert not _port_is_open(port)


def test_base_url_before_start_raises() -> None:
    fake = FakeOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = fake.base_url


def test_start_twice_raises_and_stop_is_idempotent() -> None:
    fake = FakeOpenAIServer()
    fake.start()
    try:
        with pytest.raises(RuntimeError, match="once"):
            fake.start()
    finally:
        fake.stop()
    fake.stop()
    with pytest.raises(RuntimeError):
        fake.start()


def test_sync_client_against_sync_context_manager() -> None:
    with FakeOpenAIServer() as fake:
        fake.enqueue(chat_completion("sync hello"))
        with openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as api:
            completion = api.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == "sync hello"


async def test_async_context_manager_serves_then_closes() -> None:
    async with FakeOpenAIServer() as fake:
        port = fake.port
        fake.enqueue(chat_completion("async hello"))
        async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as api:
            completion = await _create(api)
        assert isinstance(completion, openai.types.chat.ChatCompletion)
        assert completion.choices[0].message.content == "async hello"
    assert not _port_is_open(port)


# -- chat completions ------------------------------------------------------------------


async def test_text_completion_is_parsed(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(chat_completion("hello", model="m-1", prompt_tokens=7, completion_tokens=3))
    completion = await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    choice = completion.choices[0]
    assert choice.message.content == "hello"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.model == "m-1"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (7, 3)
    assert completion.usage.total_tokens == 10


async def test_tool_calls_are_parsed_and_malformed_arguments_pass_verbatim(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(
        chat_completion(
            tool_calls=[
                ("call_1", "get_weather", {"city": "Paris", "days": 2}),
                ("call_2", "broken", '{"city": "Par'),
            ]
        )
    )
    completion = await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert message.tool_calls is not None
    first, second = message.tool_calls
    assert isinstance(first, openai.types.chat.ChatCompletionMessageFunctionToolCall)
    assert isinstance(second, openai.types.chat.ChatCompletionMessageFunctionToolCall)
    assert (first.id, first.type, first.function.name) == ("call_1", "function", "get_weather")
    assert first.function.arguments == '{"city": "Paris", "days": 2}'
    assert (second.id, second.function.name) == ("call_2", "broken")
    assert second.function.arguments == '{"city": "Par'


async def test_responses_are_served_fifo(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(chat_completion("one"), FakeResponse(body=chat_completion("two")))
    server.enqueue(chat_completion("three"))
    assert server.pending == 3
    contents = []
    for _ in range(3):
        completion = await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        contents.append(completion.choices[0].message.content)
    assert contents == ["one", "two", "three"]
    assert server.pending == 0


async def test_empty_queue_answers_500_saying_so(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        await _create(client)
    assert caught.value.status_code == 500
    assert "no scripted response" in caught.value.message
    assert caught.value.code == "no_scripted_response"


async def test_custom_response_headers_are_sent(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(body=chat_completion("x"), headers={"x-request-id": "req_42"}))
    raw = await client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert raw.headers["x-request-id"] == "req_42"
    assert raw.parse().choices[0].message.content == "x"


# -- errors ----------------------------------------------------------------------------


async def test_429_raises_rate_limit_error_with_retry_after(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(429, "Rate limit reached", retry_after=2))
    with pytest.raises(openai.RateLimitError) as caught:
        await _create(client)
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.body == {
        "message": "Rate limit reached",
        "type": "rate_limit_exceeded",
        "param": None,
        "code": None,
    }


async def test_fractional_retry_after_is_sent_as_is(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(429, "slow down", retry_after=1.5))
    with pytest.raises(openai.RateLimitError) as caught:
        await _create(client)
    assert caught.value.response.headers["retry-after"] == "1.5"


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
async def test_error_statuses_raise_matching_openai_errors(
    server: FakeOpenAIServer,
    client: openai.AsyncOpenAI,
    status: int,
    exc_type: type[openai.APIStatusError],
) -> None:
    server.enqueue(error_response(status, f"failure {status}", code="some_code"))
    with pytest.raises(exc_type) as caught:
        await _create(client)
    assert caught.value.status_code == status
    assert f"failure {status}" in caught.value.message
    assert caught.value.code == "some_code"
    assert "retry-after" not in caught.value.response.headers


async def test_delay_longer_than_timeout_raises_api_timeout_error(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(body=chat_completion("late"), delay=5.0))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        await _create(client, timeout=0.2)
    assert time.monotonic() - started < 3.0


async def test_delay_shorter_than_timeout_still_answers(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(body=chat_completion("slow but fine"), delay=0.2))
    started = time.monotonic()
    completion = await _create(client)
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "slow but fine"
    assert time.monotonic() - started >= 0.2


def test_stop_does_not_wait_for_a_delayed_response() -> None:
    fake = FakeOpenAIServer()
    fake.start()
    fake.enqueue(FakeResponse(body=chat_completion("never"), delay=30.0))
    api = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0, timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        api.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    api.close()
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 2.0


async def test_unknown_path_answers_404(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.models.list()
    assert "GET /v1/models" in caught.value.message


# -- recording -------------------------------------------------------------------------


async def test_requests_are_recorded(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(chat_completion("ok"))
    await client.chat.completions.create(
        model="gpt-test",
        messages=MESSAGES,  # type: ignore[arg-type]
        temperature=0.5,
    )
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {"model": "gpt-test", "messages": MESSAGES, "temperature": 0.5}
    assert request.body.startswith(b"{")


async def test_requests_record_arrival_time(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(chat_completion("a"), chat_completion("b"))
    before = time.monotonic()
    await _create(client)
    await asyncio.sleep(0.2)
    await _create(client)
    after = time.monotonic()
    first, second = server.requests
    assert before <= first.received_at <= second.received_at <= after
    assert second.received_at - first.received_at >= 0.2


async def test_requests_snapshot_is_a_copy(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    snapshot = server.requests
    server.enqueue(chat_completion("ok"))
    await _create(client)
    assert snapshot == []
    assert len(server.requests) == 1


async def test_concurrent_requests_each_get_one_response(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    count = 20
    server.enqueue(*(chat_completion(f"r{i}") for i in range(count)))
    results = await asyncio.gather(*(_create(client) for _ in range(count)))
    contents = sorted(
        r.choices[0].message.content or ""
        for r in results
        if isinstance(r, openai.types.chat.ChatCompletion)
    )
    assert contents == sorted(f"r{i}" for i in range(count))
    assert len(server.requests) == count
    assert server.pending == 0


# -- embeddings ------------------------------------------------------------------------


async def test_embeddings_are_deterministic_and_distinct(client: openai.AsyncOpenAI) -> None:
    first = await client.embeddings.create(model="e", input=["alpha", "beta"])
    second = await client.embeddings.create(model="e", input="alpha")
    alpha, beta = (item.embedding for item in first.data)
    assert [item.index for item in first.data] == [0, 1]
    assert len(alpha) == 8
    assert alpha == second.data[0].embedding == fake_embedding("alpha")
    assert beta == fake_embedding("beta")
    assert alpha != beta
    assert math.isclose(math.fsum(v * v for v in alpha), 1.0, rel_tol=1e-5)
    assert first.usage.prompt_tokens > 0


async def test_embeddings_honour_dimensions_and_both_encodings(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    as_float = await client.embeddings.create(
        model="e", input="gamma", dimensions=37, encoding_format="float"
    )
    # Without encoding_format the client asks for base64 and decodes it itself.
    as_default = await client.embeddings.create(model="e", input="gamma", dimensions=37)
    assert server.requests[1].json["encoding_format"] == "base64"
    assert len(as_float.data[0].embedding) == 37
    assert as_float.data[0].embedding == as_default.data[0].embedding
    assert as_float.data[0].embedding == fake_embedding("gamma", 37)
    assert as_float.model == "e"
    # The client decodes whichever it gets, so check the wire format itself.
    raw = await client.embeddings.with_raw_response.create(model="e", input="gamma")
    assert isinstance(json.loads(raw.text)["data"][0]["embedding"], str)
    assert raw.parse().data[0].embedding == fake_embedding("gamma")


async def test_embeddings_do_not_consume_scripted_chat_responses(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(chat_completion("kept"))
    await client.embeddings.create(model="e", input="x")
    assert server.pending == 1


async def test_embeddings_reject_bad_dimensions(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        await client.embeddings.create(model="e", input="x", dimensions=0)


def test_fake_embedding_rejects_non_positive_dimensions() -> None:
    with pytest.raises(ValueError, match="positive"):
        fake_embedding("x", 0)
