"""The HTTP gateway: agents over HTTP, with an OpenAI-compatible chat endpoint.

``smyth serve`` runs it; ``create_app`` builds the ASGI app to run any other way. It
is a thin layer over ``AgentClient``: every route is one or two client calls, and all
state lives in Temporal, so several replicas behind a load balancer work as one.

- ``_app``: ``create_app``; ``_serve``: ``serve`` (uvicorn);
- one router per concern: ``_runs``, ``_listing`` (the tenant's runs), ``_sessions``,
  ``_approvals``, ``_memory`` (memory and schedules), ``_openai``, ``_responses``
  (OpenAI's Responses API: its output ``_responses_output``, decisions as
  ``mcp_approval_response`` items ``_responses_approvals``), ``_whoami`` (the caller's
  key), ``_a2a`` (A2A 1.0 cards and JSON-RPC, with the a2a extra: its request handler
  over runs ``_a2a_handler``, tasks as views of runs ``_a2a_tasks``, ``ListTasks``
  pages ``_a2a_listing``), ``_agui``
  (AG-UI 1.0: a thread is a session, an approval an interrupt); ``console``: the web
  console, static pages that call the API from the browser;
- identity: the key file, principals and the brake on failed authentications live in
  ``smyth_temporal.security`` (every interface shares them); here ``_auth`` (the FastAPI
  dependencies);
- plumbing: ``_gateway`` (what routes share, tenancy checks), ``_problems`` (errors as
  RFC 9457 problem details), ``_sse`` (Server-Sent Events), ``_limits`` (body size),
  ``_models`` (request and response bodies); ``BodyLimit`` and ``AnnouncingServer``
  (uvicorn, saying where it listens) serve the codec server too.

It needs the ``server`` extra (FastAPI, uvicorn, ag-ui-protocol): importing it without them fails
with the command that installs them.

Added in 0.3.0.
"""

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "smyth_temporal.gateway needs the server extra: pip install 'smyth-temporal[server]'"
    ) from exc

from smyth_temporal.gateway._app import create_app
from smyth_temporal.gateway._gateway import Gateway, GatewayOptions
from smyth_temporal.gateway._limits import BodyLimit
from smyth_temporal.gateway._problems import Problem
from smyth_temporal.gateway._serve import DEV_HOST, AnnouncingServer, require_keys, serve
from smyth_temporal.security import (
    KEYS_FILE_ENV,
    ROLES,
    ApiKey,
    KeyStore,
    Permission,
    Principal,
    Role,
    default_keys_path,
)

__all__ = [
    "DEV_HOST",
    "KEYS_FILE_ENV",
    "ROLES",
    "AnnouncingServer",
    "ApiKey",
    "BodyLimit",
    "Gateway",
    "GatewayOptions",
    "KeyStore",
    "Permission",
    "Principal",
    "Problem",
    "Role",
    "create_app",
    "default_keys_path",
    "require_keys",
    "serve",
]
