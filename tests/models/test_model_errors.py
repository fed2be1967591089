"""Classification of openai errors, produced by the real client against the fake server."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import openai
import pytest
import temporalio.api.failure.v1
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from smyth_temporal.exceptions import ConfigurationError, ModelError, ModelHTTPError
from smyth_temporal.models import to_application_error
from smyth_temporal.models._errors import is_retryable_status
from smyth_temporal.testing import FakeOpenAIServer, FakeResponse, chat_completion, error_response

API_KEY = "sk-test-secret-0123456789"
MESSAGES: list[dict[str, str]] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=10
    ) as api:
        yield api


async def _classify(api: openai.AsyncOpenAI, *, timeout: float | None = None) -> ApplicationError:
    """Make one chat completion call that must fail and classify its error."""
    try:
        if timeout is None:
            await api.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        else:
            await api.chat.completions.create(model="m", messages=MESSAGES, timeout=timeout)  # type: ignore[arg-type]
    except Exception as exc:
        error = to_application_error(exc)
        assert API_KEY not in str(error)
        assert API_KEY not in repr(error.details)
        return error
    raise AssertionError("the call was expected to fail")


def _status_details(error: ApplicationError) -> dict[str, object]:
    (details,) = error.details
    assert isinstance(details, dict)
    return details


# -- retryable statuses ----------------------------------------------------------------


async def test_429_with_retry_after_seconds(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(429, "Rate limit reached for requests", retry_after=2))
    error = await _classify(client)
    assert error.type == "ModelHTTPError"
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(seconds=2)
    assert "429 Too Many Requests" in error.message
    assert "Rate limit reached for requests" in error.message
    details = _status_details(error)
    assert details["status_code"] == 429
    assert details["retry_after_seconds"] == 2.0
    assert details["error_type"] == "rate_limit_exceeded"


async def test_429_with_retry_after_http_date(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.enqueue(FakeResponse(status=429, body=None, headers={"Retry-After": when}))
    error = await _classify(client)
    assert not error.non_retryable
    assert error.next_retry_delay is not None
    # HTTP dates have one-second resolution and the call itself takes a moment.
    assert timedelta(seconds=27) <= error.next_retry_delay <= timedelta(seconds=31)


async def test_retry_after_http_date_in_the_past_gives_no_delay(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    when = email.utils.formatdate(time.time() - 60, usegmt=True)
    server.enqueue(FakeResponse(status=429, headers={"Retry-After": when}))
    error = await _classify(client)
    assert not error.non_retryable
    assert error.next_retry_delay is None


async def test_retry_after_ms_wins_over_retry_after(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(status=429, headers={"retry-after-ms": "1500", "Retry-After": "9"}))
    error = await _classify(client)
    assert error.next_retry_delay == timedelta(milliseconds=1500)


@pytest.mark.parametrize("header", ["86400", "1e300", "inf"])
async def test_huge_retry_after_is_capped_at_five_minutes(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI, header: str
) -> None:
    server.enqueue(FakeResponse(status=503, headers={"Retry-After": header}))
    error = await _classify(client)
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(minutes=5)


@pytest.mark.parametrize("header", ["soon", "-5", "0", "nan"])
async def test_unusable_retry_after_is_ignored(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI, header: str
) -> None:
    server.enqueue(FakeResponse(status=429, headers={"Retry-After": header}))
    error = await _classify(client)
    assert not error.non_retryable
    assert error.next_retry_delay is None


async def test_500_is_retryable_without_delay(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(500, "The server had an error"))
    error = await _classify(client)
    assert error.type == "ModelHTTPError"
    assert not error.non_retryable
    assert error.next_retry_delay is None
    assert "500 Internal Server Error" in error.message
    assert "The server had an error" in error.message
    assert _status_details(error)["status_code"] == 500


@pytest.mark.parametrize("status", [408, 409, 502, 503, 504, 529])
async def test_other_retryable_statuses(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI, status: int
) -> None:
    server.enqueue(error_response(status, "transient"))
    error = await _classify(client)
    assert error.type == "ModelHTTPError"
    assert not error.non_retryable
    assert str(status) in error.message


async def test_non_json_error_body_is_still_classified(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(status=502, body=None))
    error = await _classify(client)
    assert not error.non_retryable
    assert error.message == "model endpoint failed (502 Bad Gateway)"


# -- non-retryable statuses ------------------------------------------------------------


async def test_400_is_non_retryable_with_status_and_message(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(400, "Invalid value for 'messages'", code="invalid_value"))
    error = await _classify(client)
    assert error.type == "ModelHTTPError"
    assert error.non_retryable
    assert error.next_retry_delay is None
    assert error.message == (
        "model endpoint rejected the request (400 Bad Request): Invalid value for 'messages'"
    )
    details = _status_details(error)
    assert details["status_code"] == 400
    assert details["error_code"] == "invalid_value"


async def test_4xx_ignores_retry_after(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(400, "bad", retry_after=3))
    error = await _classify(client)
    assert error.non_retryable
    assert error.next_retry_delay is None


@pytest.mark.parametrize("status", [401, 403, 404, 413, 422])
async def test_other_client_errors_are_non_retryable(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI, status: int
) -> None:
    server.enqueue(error_response(status, f"nope {status}"))
    error = await _classify(client)
    assert error.type == "ModelHTTPError"
    assert error.non_retryable
    assert str(status) in error.message
    assert f"nope {status}" in error.message


# -- transport errors ------------------------------------------------------------------


async def test_timeout_is_retryable_model_timeout(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(FakeResponse(body=chat_completion("late"), delay=5.0))
    error = await _classify(client, timeout=0.2)
    assert error.type == "ModelTimeout"
    assert not error.non_retryable


async def test_connection_refused_is_retryable_connection_error() -> None:
    # Bind then close to get a port nothing listens on.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=0
    ) as api:
        error = await _classify(api)
    assert error.type == "ModelConnectionError"
    assert not error.non_retryable
    assert "could not connect to the model endpoint" in error.message


# -- other exceptions ------------------------------------------------------------------


def test_unknown_exception_is_retryable_model_error() -> None:
    error = to_application_error(ValueError("boom"))
    assert error.type == "ModelError"
    assert not error.non_retryable
    assert "ValueError" in error.message
    assert "boom" in error.message


def test_application_error_passes_through_unchanged() -> None:
    original = ApplicationError("already classified", type="Custom", non_retryable=True)
    assert to_application_error(original) is original


def test_sdk_model_errors_keep_their_type_and_retryability() -> None:
    http_error = to_application_error(ModelHTTPError("bad reply", status_code=400, retryable=False))
    assert (http_error.type, http_error.non_retryable) == ("ModelHTTPError", True)
    assert http_error.details == ({"status_code": 400},)
    model_error = to_application_error(ModelError("empty choices", retryable=True))
    assert (model_error.type, model_error.non_retryable) == ("ModelError", False)


def test_configuration_error_is_non_retryable() -> None:
    error = to_application_error(ConfigurationError("no API key"))
    assert (error.type, error.non_retryable) == ("ConfigurationError", True)


async def test_classified_error_survives_temporal_failure_conversion(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error_response(429, "slow down", retry_after=2))
    error = await _classify(client)
    converter = DataConverter.default
    failure = temporalio.api.failure.v1.Failure()
    converter.failure_converter.to_failure(error, converter.payload_converter, failure)
    restored = converter.failure_converter.from_failure(failure, converter.payload_converter)
    assert isinstance(restored, ApplicationError)
    assert restored.type == "ModelHTTPError"
    assert not restored.non_retryable
    assert restored.next_retry_delay == timedelta(seconds=2)
    assert _status_details(restored)["status_code"] == 429


# -- is_retryable_status ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, False),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (408, True),
        (409, True),
        (422, False),
        (429, True),
        (500, True),
        (503, True),
        (599, True),
    ],
)
def test_is_retryable_status(status: int, expected: bool) -> None:
    assert is_retryable_status(status) is expected
