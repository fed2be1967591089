"""``create_app``: the gateway as an ASGI app, one router per concern.

The routers (``runs``, ``listing`` and ``lineage``, ``sessions``, ``approvals``, ``memory``,
``openai``, ``agui``) share only the ``Gateway`` on ``app.state`` and the auth dependencies; the
web console (``console``) is mounted beside them and only calls them from the browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from smyth_temporal.clients import AgentClient, AgentRef
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.gateway._agui import router as agui
from smyth_temporal.gateway._approvals import router as approvals
from smyth_temporal.gateway._gateway import Gateway, GatewayOptions
from smyth_temporal.gateway._hosts import LoopbackHostOnly
from smyth_temporal.gateway._limits import BodyLimit
from smyth_temporal.gateway._lineage import router as lineage
from smyth_temporal.gateway._listing import router as listing
from smyth_temporal.gateway._memory import router as memory
from smyth_temporal.gateway._openai import router as openai_api
from smyth_temporal.gateway._problems import (
    OPENAI_PREFIX,
    PROBLEM_JSON,
    Problem,
    install_error_handlers,
)
from smyth_temporal.gateway._responses import router as responses_api
from smyth_temporal.gateway._runs import router as runs
from smyth_temporal.gateway._sessions import router as sessions
from smyth_temporal.gateway._whoami import router as whoami
from smyth_temporal.gateway.console import router as console
from smyth_temporal.security import KeyStore

a2a: APIRouter | None
try:  # A2A needs the a2a extra; without it the gateway serves everything else.
    from smyth_temporal.gateway._a2a import router as a2a
except ImportError:  # pragma: no cover - installed with the dev extra
    a2a = None

__all__ = ["create_app"]

_DESCRIPTION = """\
Durable agents over HTTP: start runs, follow their events, talk to sessions, decide
approvals, search memory; OpenAI's chat completions and Responses under `/openai/v1`;
and AG-UI 1.0 at `/ag-ui/{agent}` (a thread is a session, an approval an interrupt).

Every route but `/healthz` needs an API key (`Authorization: Bearer <key>`, from
`smyth keys create`), which names the only tenant it reaches and a role: `viewer`
reads, `operator` also starts, sends and interrupts, `approver` also decides
approvals, `admin` does everything. Errors are problem details (RFC 9457).
"""

_OPENAI_ERROR = {
    "type": "object",
    "description": "an error in OpenAI's shape",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}


class Health(BaseModel):
    """The gateway answers (it holds no state: Temporal does)."""

    status: str = "ok"


def create_app(
    agents: AgentClient,
    served: Sequence[AgentRef],
    *,
    keys: KeyStore | None = None,
    insecure_dev: bool = False,
    options: GatewayOptions | None = None,
) -> FastAPI:
    """The gateway's ASGI app over ``agents``, serving the agents in ``served``.

    Args:
        agents: The client every route calls (its task queue is where runs start).
        served: The agents callers may start and talk to (classes or type names).
        keys: The API keys (default: the key file, ``SMYTH_KEYS_FILE``).
        insecure_dev: Requests without a key act as tenant ``default``, role admin;
            for one person on their own machine (``smyth serve --insecure-dev``); only
            requests for a loopback ``Host`` are answered (others: 421).
        options: Limits and timings.

    Raises:
        ConfigurationError: No agent to serve.

    Added in 0.3.0.
    """
    if not served:
        raise ConfigurationError("the gateway serves no agent: name at least one")
    options = options or GatewayOptions()
    app = FastAPI(
        title="smyth gateway",
        version=version("smyth-temporal"),
        description=_DESCRIPTION,
        responses={
            "4XX": {"model": Problem, "description": "problem details (RFC 9457)"},
            "5XX": {"model": Problem, "description": "problem details (RFC 9457)"},
        },
    )
    app.state.gateway = Gateway(
        agents,
        served,
        keys=keys if keys is not None else KeyStore(),
        insecure_dev=insecure_dev,
        options=options,
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=options.max_body_bytes)
    if insecure_dev:
        app.add_middleware(LoopbackHostOnly)  # no keys: no page elsewhere may reach it
    for router in (
        listing,
        runs,
        lineage,
        sessions,
        approvals,
        memory,
        whoami,
        openai_api,
        responses_api,
        agui,
    ):
        app.include_router(router)
    if a2a is not None:
        app.include_router(a2a)
    if options.console:
        app.include_router(console)

    app.openapi = lambda: _document(app)  # type: ignore[method-assign]

    @app.get("/healthz", tags=["health"], summary="Liveness")
    async def healthz() -> Health:
        """Answers while the process serves requests; needs no key."""
        return Health()

    return app


def _document(app: FastAPI) -> dict[str, Any]:
    """FastAPI's OpenAPI, with errors as they are sent: ``application/problem+json``.

    FastAPI documents every error as JSON, and validation errors in its own shape;
    this gateway answers both with problem details.
    """
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    openai = {"application/json": {"schema": _OPENAI_ERROR}}
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                if code[0] in "45":
                    response["content"] = openai if path.startswith(OPENAI_PREFIX) else problem
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    app.openapi_schema = schema
    return schema
