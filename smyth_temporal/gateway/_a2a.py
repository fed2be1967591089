"""A2A 1.0 (JSON-RPC binding): agent cards and ``POST /a2a/{agent}``.

Each served agent is one A2A agent: its card is at
``/a2a/{agent}/.well-known/agent-card.json`` and names ``/a2a/{agent}`` as its JSON-RPC
endpoint. The gateway's own ``/.well-known/agent-card.json`` is the card of the first
agent served (a client given only the host talks to it) and lists every agent's card in
its description; a client that wants another agent fetches that agent's card. Cards
need no key; they say which the endpoint needs: the gateway's keys, as HTTP bearer.

Skills come from the agent's tools (one per tool, its name and description) and the
agent's docstring; an agent served by name only has one skill, the agent itself.

The endpoint authenticates the key (401 without one) and checks its role before the
SDK's JSON-RPC dispatcher sees the request: ``GetTask``, ``ListTasks`` and
``SubscribeToTask`` read, ``SendMessage``, ``SendStreamingMessage`` and ``CancelTask``
operate, and a message that answers a task (it has a ``taskId``: a decision) needs
``approve``; otherwise 403. Errors before the dispatcher are HTTP statuses with a
JSON-RPC error body (see ``_problems``); after it, JSON-RPC errors (``TemporalTasks``).
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from smyth_temporal.clients import agent_name
from smyth_temporal.gateway._a2a_handler import AGENT_STATE, CALLER_STATE, TemporalTasks
from smyth_temporal.gateway._auth import Reader
from smyth_temporal.gateway._gateway import Gateway, GatewayDep
from smyth_temporal.security import Permission

try:
    from a2a.server.context import ServerCallContext
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.server.routes.common import DefaultServerCallContextBuilder
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0
except ImportError as exc:  # pragma: no cover - the a2a extra brings it
    raise ImportError(
        "the gateway's A2A endpoint needs a2a-sdk: pip install 'smyth-temporal[a2a]'"
    ) from exc

__all__ = ["A2A_PREFIX", "router"]

A2A_PREFIX = "/a2a/"
"""The agents' JSON-RPC endpoints and cards are under this prefix."""
_SCHEME = "bearer"
_MODES = ["text/plain", "application/json"]
_WRITES = {"SendMessage", "SendStreamingMessage", "CancelTask"}

router = APIRouter(tags=["a2a"])


class _CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the caller and agent the route found."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CALLER_STATE] = request.state.smyth_caller
        context.state[AGENT_STATE] = request.state.smyth_agent
        return context


def _dispatcher(request: Request, gateway: Gateway) -> JsonRpcDispatcher:
    """The app's one dispatcher (built on first use; it holds no task)."""
    found: JsonRpcDispatcher | None = getattr(request.app.state, "a2a_dispatcher", None)
    if found is None:
        found = JsonRpcDispatcher(TemporalTasks(gateway), context_builder=_CallerContext())
        request.app.state.a2a_dispatcher = found
    return found


@router.get(AGENT_CARD_WELL_KNOWN_PATH, summary="The gateway's A2A agent card")
async def gateway_card(request: Request, gateway: GatewayDep) -> JSONResponse:
    """The card of the first agent served; its description names every agent's card."""
    return JSONResponse(agent_card_to_dict(card(gateway, gateway.agent_names[0], request)))


@router.get(
    f"{A2A_PREFIX}{{agent}}{AGENT_CARD_WELL_KNOWN_PATH}", summary="An agent's A2A agent card"
)
async def agent_card(agent: str, request: Request, gateway: GatewayDep) -> JSONResponse:
    """The agent's card: its skills, its endpoint and the key it needs (404: not served)."""
    return JSONResponse(agent_card_to_dict(card(gateway, gateway.agent(agent), request)))


@router.post(f"{A2A_PREFIX}{{agent}}", summary="A2A JSON-RPC endpoint of an agent")
async def rpc(agent: str, request: Request, caller: Reader, gateway: GatewayDep) -> Response:
    """A2A 1.0 over JSON-RPC (``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ...)."""
    name = gateway.agent(agent)
    caller.permit(_permission(await request.body()))
    request.state.smyth_caller = caller
    request.state.smyth_agent = name
    return await _dispatcher(request, gateway).handle_requests(request)


def _permission(body: bytes) -> Permission:
    """What the request's method needs (a body that is not JSON-RPC: read; refused later)."""
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return "read"
    if not isinstance(parsed, dict) or parsed.get("method") not in _WRITES:
        return "read"
    params = parsed.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    # Both spellings: the dispatcher's protobuf parser takes a field's JSON name and its
    # proto name alike, so ``task_id`` must not slip past as a new message.
    if isinstance(message, dict) and (message.get("taskId") or message.get("task_id")):
        return "approve"  # a message into a task answers its approval request
    return "operate"


def card(gateway: Gateway, name: str, request: Request) -> AgentCard:
    """The A2A card of agent ``name`` as served at ``request``'s host."""
    base = str(request.base_url).rstrip("/")
    cls = next(
        (a for a in gateway.served if not isinstance(a, str) and agent_name(a) == name), None
    )
    description = ((cls.__doc__ if cls is not None else None) or f"The {name} agent.").strip()
    others = [n for n in gateway.agent_names if n != name]
    if others and request.url.path == AGENT_CARD_WELL_KNOWN_PATH:
        listed = ", ".join(
            f"{n}: {base}{A2A_PREFIX}{n}{AGENT_CARD_WELL_KNOWN_PATH}" for n in others
        )
        description += f"\n\nOther agents on this gateway: {listed}"
    result = AgentCard(
        name=name,
        description=description,
        version=version("smyth-temporal"),
        supported_interfaces=[
            AgentInterface(
                url=f"{base}{A2A_PREFIX}{name}",
                protocol_binding="JSONRPC",
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        skills=_skills(name, description, cls),
    )
    result.security_schemes[_SCHEME].CopyFrom(
        SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer",
                description="A gateway API key (`smyth keys create`): its tenant and role.",
            )
        )
    )
    requirement = SecurityRequirement()
    requirement.schemes[_SCHEME].CopyFrom(StringList())
    result.security_requirements.append(requirement)
    return result


def _skills(name: str, description: str, cls: Any) -> list[AgentSkill]:
    tools = list(cls.config.tools) if cls is not None else []
    skills = [
        AgentSkill(
            id=tool.name,
            name=tool.name,
            description=tool.description or tool.name,
            tags=["tool", tool.effect],
        )
        for tool in tools
    ]
    first = description.splitlines()[0]
    return [AgentSkill(id=name, name=name, description=first, tags=["agent"]), *skills]
