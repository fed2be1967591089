"""Errors as HTTP answers: RFC 9457 problem details, with the messages the CLI prints.

An error of the SDK's tree keeps its message (what ``smyth`` prints after
``smyth: error:``) as ``detail`` and names its class in ``type``
(``urn:smyth:error:AgentNotFoundError``), so a client can map it back with
``smyth_temporal.exceptions.error_type``. Under ``/openai/`` the same error takes
OpenAI's shape (``{"error": {"message": ...}}``), which OpenAI clients show. No answer
ever carries a traceback: an unexpected error is logged and answered with a plain 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._text import one_line
from smyth_temporal.exceptions import (
    AccessDeniedError,
    AgentFailedError,
    AgentNotFoundError,
    ClientError,
    ForkError,
    InvalidDecisionError,
    InvalidInterruptError,
    InvalidMessageError,
    MemoryNotFoundError,
    RewindError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    ServerUnavailableError,
    SmythError,
    UnknownAgentError,
    UserError,
)

__all__ = [
    "OPENAI_PREFIX",
    "PROBLEM_JSON",
    "Problem",
    "install_error_handlers",
    "openai_error",
    "problem_of",
    "problem_response",
]

log = structlog.get_logger("smyth_temporal.gateway")

PROBLEM_JSON = "application/problem+json"
OPENAI_PREFIX = "/openai/"
"""Paths under this prefix answer errors in OpenAI's shape."""
A2A_RPC_PREFIX = "/a2a/"
"""POSTs under this prefix (A2A's JSON-RPC endpoints) answer errors as JSON-RPC errors."""
_JSONRPC_INVALID_REQUEST = -32600

ERROR_TYPE_PREFIX = "urn:smyth:error:"

# Most specific first: the first class an error is an instance of decides its status.
_STATUSES: tuple[tuple[type[SmythError], HTTPStatus], ...] = (
    (AgentNotFoundError, HTTPStatus.NOT_FOUND),
    # A role that may not: 403 in the words every interface uses (``Principal.permit``).
    (AccessDeniedError, HTTPStatus.FORBIDDEN),
    (UnknownAgentError, HTTPStatus.NOT_FOUND),
    (ScheduleNotFoundError, HTTPStatus.NOT_FOUND),
    (MemoryNotFoundError, HTTPStatus.NOT_FOUND),
    (InvalidDecisionError, HTTPStatus.CONFLICT),
    (InvalidMessageError, HTTPStatus.CONFLICT),
    (InvalidInterruptError, HTTPStatus.CONFLICT),
    (AgentFailedError, HTTPStatus.CONFLICT),
    (ForkError, HTTPStatus.CONFLICT),  # the run has not finished that step: nothing started
    (RewindError, HTTPStatus.CONFLICT),  # not a step to go back to: nothing was reset
    (ScheduleExistsError, HTTPStatus.CONFLICT),
    (ServerUnavailableError, HTTPStatus.SERVICE_UNAVAILABLE),
    # What remains of the clients' errors is mostly "no worker answered/took it".
    (ClientError, HTTPStatus.SERVICE_UNAVAILABLE),
    (UserError, HTTPStatus.BAD_REQUEST),
)


class Problem(BaseModel):
    """An error, as RFC 9457 problem details (``application/problem+json``).

    Added in 0.3.0.
    """

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    """What kind of problem: ``urn:smyth:error:<class of the SDK's error tree>``, or
    ``about:blank`` for plain HTTP errors (then ``title`` is the status phrase)."""
    title: str
    """A short summary of the kind of problem."""
    status: int
    """The HTTP status."""
    detail: str
    """What went wrong this time (for SDK errors, the line the CLI prints)."""


def problem_of(exc: Exception) -> Problem:
    """The problem details of an error raised while answering (unexpected ones logged)."""
    if isinstance(exc, SmythError):
        status = next(
            (code for kind, code in _STATUSES if isinstance(exc, kind)),
            HTTPStatus.INTERNAL_SERVER_ERROR,
        )
        summary = (type(exc).__doc__ or status.phrase).strip().splitlines()[0]
        return Problem(
            type=ERROR_TYPE_PREFIX + type(exc).__name__,
            title=summary,
            status=status,
            detail=one_line(exc),
        )
    if isinstance(exc, HTTPException):
        return _plain(exc.status_code, str(exc.detail))
    if isinstance(exc, ClientDisconnect):  # nobody reads this answer; nothing went wrong
        return Problem(title="Client Closed Request", status=499, detail="the client left")
    if isinstance(exc, RPCError):
        unavailable = exc.status == RPCStatusCode.UNAVAILABLE
        status = HTTPStatus.SERVICE_UNAVAILABLE if unavailable else HTTPStatus.BAD_GATEWAY
        return _plain(status, one_line(f"Temporal: {exc.message or exc}"))
    # Logged with its traceback for the operator; the caller learns nothing internal.
    log.error("gateway.unexpected_error", exc_info=exc)
    return _plain(HTTPStatus.INTERNAL_SERVER_ERROR, "the gateway failed unexpectedly; see its log")


def _plain(status: int, detail: str, **extra: Any) -> Problem:
    return Problem(title=HTTPStatus(status).phrase, status=status, detail=detail, **extra)


def openai_error(problem: Problem) -> dict[str, Any]:
    """``problem`` in OpenAI's error shape, which OpenAI clients raise with its message."""
    code = problem.type.removeprefix(ERROR_TYPE_PREFIX)
    return {
        "error": {
            "message": problem.detail,
            "type": "invalid_request_error" if problem.status < 500 else "server_error",
            "param": None,
            "code": code if code != "about:blank" else HTTPStatus(problem.status).name.lower(),
        }
    }


def jsonrpc_error(problem: Problem) -> dict[str, Any]:
    """``problem`` as a JSON-RPC error, which A2A clients raise with its message.

    The HTTP status stays the REST API's; ``data`` carries the problem details.
    """
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": _JSONRPC_INVALID_REQUEST,
            "message": problem.detail,
            "data": problem.model_dump(mode="json", exclude_none=True),
        },
    }


def problem_response(
    request: Request, problem: Problem, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """Answer with ``problem``: problem details, or the protocol's error shape.

    OpenAI's under ``/openai/``, a JSON-RPC error from A2A's endpoints.
    """
    if request.url.path.startswith(OPENAI_PREFIX):
        return JSONResponse(openai_error(problem), status_code=problem.status, headers=headers)
    if request.method == "POST" and request.url.path.startswith(A2A_RPC_PREFIX):
        return JSONResponse(jsonrpc_error(problem), status_code=problem.status, headers=headers)
    return JSONResponse(
        problem.model_dump(mode="json", exclude_none=True),
        status_code=problem.status,
        headers=headers,
        media_type=PROBLEM_JSON,
    )


async def _error(request: Request, exc: Exception) -> JSONResponse:
    headers = exc.headers if isinstance(exc, HTTPException) else None
    return problem_response(request, problem_of(exc), headers)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in exc.errors()
    ]
    if any(e["type"] == "json_invalid" for e in errors):
        detail = "the request body is not valid JSON"
        return problem_response(request, _plain(HTTPStatus.BAD_REQUEST, detail))
    detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
    problem = _plain(HTTPStatus.UNPROCESSABLE_ENTITY, one_line(detail or "invalid"), errors=errors)
    return problem_response(request, problem)


async def _invalid_value(request: Request, exc: Exception) -> JSONResponse:
    """A 422 for a value the SDK's own types refuse that the route's schema let through.

    A memory namespace with a control character, say: it is the caller's input, so it
    is refused like any other invalid request, not answered with a 500.
    """
    assert isinstance(exc, ValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in exc.errors(include_url=False, include_input=False)
    ]
    detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
    log.info("gateway.invalid_value", path=request.url.path, errors=len(errors))
    problem = _plain(HTTPStatus.UNPROCESSABLE_ENTITY, one_line(detail or "invalid"), errors=errors)
    return problem_response(request, problem)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with problem details (or OpenAI's error shape)."""
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(ValidationError, _invalid_value)
    for kind in (SmythError, HTTPException, RPCError, Exception):
        app.add_exception_handler(kind, _error)
