"""Agents as an MCP server: the tools an MCP client uses to drive smyth agents.

An interface: each tool is a call to ``AgentClient`` and nothing more, so an MCP
client (an IDE, a desktop assistant, another agent) can do what a script does: list
the agents, start a run, talk to a session, read a run's state and result, list and
decide approvals. A refusal (an unknown run, a decision the agent refuses) comes back
as the tool's error, worded as the client library words it.

Over HTTP, every request needs an API key when the key file has any (the gateway's
keys, ``RequireKey``), and each call acts as its key: its tenant, its role, and its
name recorded as who decided. A server without keys binds loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ConfigurationError, SmythError
from smyth_temporal.mcp_server._auth import Callers, RequireKey, is_loopback
from smyth_temporal.mcp_server._task_notifications import TaskNotifications
from smyth_temporal.mcp_server._tasks import RunTasks, TaskMiddleware
from smyth_temporal.mcp_server._tasks_extension import TasksExtension
from smyth_temporal.security import KeyStore
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.approvals import ApprovalRequest

__all__ = ["DEFAULT_RESULT_WAIT", "Transport", "agents_mcp_server", "http_keys", "serve_mcp"]

Transport = Literal["stdio", "http"]
"""How MCP clients reach the server: its stdin/stdout, or streamable HTTP."""

DEFAULT_RESULT_WAIT = 30.0
"""Seconds ``run_result`` waits for a run that has not ended, before it says so."""

_MAX_RESULT_WAIT = 600.0

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_START = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
# Deciding lets a gated tool act on the world (or stops it): a client must ask its user
# every time, never auto-approve it as harmless or safe to repeat.
_DECIDE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)

_INSTRUCTIONS = (
    "Durable AI agents on Temporal. list_agents names the agents; start_run starts one on "
    "a task and returns its workflow id; run_state and run_result follow it. An agent may "
    "stop to wait for a person's approval of a tool call: list_approvals shows those "
    "requests, decide_approval approves or rejects one. send_message talks to an agent in "
    "a session that keeps its context between messages. A client of protocol 2025-11-25 may "
    "call start_run as a task (its id is the workflow id) and poll it with tasks/get; an "
    "input_required task waits for decide_approval. A 2026-07-28 client that declares the "
    "tasks extension gets start_run as a task; its approvals come as input requests."
)


def agents_mcp_server(
    agents: AgentClient,
    served: Sequence[str],
    *,
    name: str = "smyth",
    keys: KeyStore | None = None,
) -> MCPServer:
    """An MCP server whose tools drive ``served`` agents through ``agents``.

    Args:
        agents: The client (its task queue is where runs start).
        served: The agents' workflow type names; ``start_run`` and ``send_message``
            accept only these.
        name: The server's name, as clients see it.
        keys: Each call acts as the API key of the HTTP request that carried it
            (``Authorization: Bearer``); ``None``: every call acts as ``agents``.

    Added in 0.3.0. Changed in 0.8.0: ``keys``; deciding is annotated destructive and
    not idempotent. Changed in 0.9.0: MCP tasks (2025-11-25): ``start_run`` may be
    called as a task, served with ``tasks/get``, ``tasks/result``, ``tasks/list`` and
    ``tasks/cancel`` from Temporal. Changed in 0.10.0: the tasks extension of 2026-07-28
    (``io.modelcontextprotocol/tasks``): ``start_run`` answers a client that declares it
    with a task; approvals are its input requests, decided with ``tasks/update``.
    """
    known = list(dict.fromkeys(served))
    runs = RunTasks(Callers(agents, keys), known)
    tasks = TasksExtension(runs)
    server: MCPServer = MCPServer(name, instructions=_INSTRUCTIONS, extensions=[tasks])
    server.middleware.append(TaskMiddleware(runs))
    server.middleware.append(TaskNotifications(tasks))
    callers = runs.callers

    def caller(ctx: Context) -> AgentClient:
        with _refusals():
            return callers.client(ctx.headers)

    def agent_named(agent: str) -> str:
        if agent not in known:
            raise ToolError(f"unknown agent {agent!r}; this server serves: {', '.join(known)}")
        return agent

    @server.tool(annotations=_READ)
    async def list_agents(ctx: Context) -> dict[str, Any]:
        """The agents this server can start, and how many workers serve their task queue."""
        client = caller(ctx)
        return {
            "agents": known,
            "task_queue": client.task_queue,
            "workers_polling": await client.workers_polling(),
        }

    @server.tool(annotations=_START)
    async def start_run(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context, agent: str, prompt: str, tenant: str = "default"
    ) -> dict[str, Any]:
        """Start an agent on a task; returns the run's workflow id (follow it with run_state).

        Args:
            agent: The agent's name (see list_agents).
            prompt: The task, in plain words.
            tenant: Whose run it is (memory and approvals are kept per tenant); with
                an API key, the key's tenant.
        """
        with _refusals():
            handle = await caller(ctx).start(
                agent_named(agent), AgentInput(prompt=prompt, tenant=tenant)
            )
        return {"workflow_id": handle.id, "agent": agent}

    @server.tool(annotations=_START)
    async def send_message(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context, agent: str, session: str, text: str, tenant: str = "default"
    ) -> dict[str, Any]:
        """Send a message to an agent's session (started by the first one); returns the reply.

        Args:
            agent: The agent's name (see list_agents).
            session: The session's id: the same id continues the same conversation.
            text: The message.
            tenant: Whose session it is.
        """
        with _refusals():
            reply = await caller(ctx).send(
                agent_named(agent), session, text, tenant=tenant, sender="mcp"
            )
        return {} if reply is None else reply.model_dump(mode="json")

    @server.tool(annotations=_READ)
    async def run_state(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context, workflow_id: str
    ) -> dict[str, Any]:
        """A run's state: status, step, recent messages, pending tool calls and approvals.

        Args:
            workflow_id: The run's workflow id (from start_run).
        """
        with _refusals():
            state = await caller(ctx).state(workflow_id)
        return state.model_dump(mode="json", exclude={"data"})

    @server.tool(annotations=_READ)
    async def run_result(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context, workflow_id: str, wait_seconds: float = DEFAULT_RESULT_WAIT
    ) -> dict[str, Any]:
        """A run's result (output, status, steps, usage), waiting up to wait_seconds for it.

        Args:
            workflow_id: The run's workflow id (from start_run).
            wait_seconds: How long to wait for a run that has not ended (at most 600).
        """
        wait = min(max(wait_seconds, 0.0), _MAX_RESULT_WAIT)
        client = caller(ctx)
        with _refusals():
            try:
                async with asyncio.timeout(wait):
                    result = await client.result(workflow_id)
            except TimeoutError:
                state = await client.state(workflow_id)
                return {"finished": False, "status": state.status, "step": state.step}
        return {"finished": True, **result.model_dump(mode="json")}

    @server.tool(annotations=_READ)
    async def list_approvals(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context, tenant: str | None = None
    ) -> dict[str, Any]:
        """Tool calls waiting for a person's approval, across every running agent.

        Args:
            tenant: Only this tenant's (default: all).
        """
        with _refusals():
            pending = await caller(ctx).pending_approvals(tenant=tenant)
        return {"pending": [p.model_dump(mode="json") for p in pending]}

    @server.tool(annotations=_DECIDE)
    async def decide_approval(  # noqa: D417 (ctx: injected, not the client's)
        ctx: Context,
        workflow_id: str,
        approve: bool,
        request_id: str | None = None,
        by: str | None = None,
        comment: str | None = None,
        arguments_sha256: str | None = None,
    ) -> dict[str, Any]:
        """Approve or reject a pending tool call of a run; the agent goes on at once.

        Ask the person every time: approving lets the call act on the world.

        Args:
            workflow_id: The run's workflow id.
            approve: True to let the call run, false to refuse it (the model is told).
            request_id: The request you showed the person (from list_approvals).
                Without it, ``arguments_sha256`` must name what they saw: the only
                pending request is decided only if its arguments still hash to it.
            by: Who decides (kept in the audit trail); with an API key, the key's
                name is recorded whatever this says.
            comment: Why (the model sees it on a rejection).
            arguments_sha256: The hash of the arguments you saw (from list_approvals):
                the decision is refused if they are not what the call would run with.
        """
        client = caller(ctx)
        by = by or "mcp"  # with a key, the client records the key's name instead
        with _refusals():
            if request_id is None:
                # "The only pending request" may not be the one the person looked at.
                # A key that may not decide is refused before anything is shown; another
                # tenant's run is not found by ``pending_request``, as by any call.
                client.identity.permit("approve")
                request_id = _shown_request(
                    await client.pending_request(workflow_id), arguments_sha256
                )
            if approve:
                outcome = await client.approve(
                    workflow_id,
                    request_id,
                    by=by,
                    comment=comment,
                    arguments_sha256=arguments_sha256,
                )
            else:
                outcome = await client.reject(workflow_id, request_id, by=by, comment=comment)
        request = outcome.request if outcome is not None else None
        return {"decided": request.model_dump(mode="json") if request else None}

    return server


def _shown_request(pending: ApprovalRequest, arguments_sha256: str | None) -> str:
    """The id of ``pending``, if the decision names its arguments; else a refusal showing it."""
    if arguments_sha256 == pending.arguments_sha256:
        return pending.id
    shown = json.dumps(pending.arguments, sort_keys=True)
    problem = "names other arguments" if arguments_sha256 else "names no request"
    raise ToolError(
        f"the decision {problem}: request {pending.id} is pending ({pending.tool} with "
        f"{shown}, arguments_sha256 {pending.arguments_sha256}). Show it to the person, "
        "then decide with its request_id or arguments_sha256."
    )


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """Report what the client library refuses as the tool's error, in its words.

    An unknown run, a refused decision, a failed run; anything else is a bug, and the
    client sees only "Error executing tool".
    """
    try:
        yield
    except SmythError as exc:
        raise ToolError(str(exc)) from exc


def http_keys(host: str, keys: KeyStore | None) -> KeyStore | None:
    """The keys an HTTP server on ``host`` requires: ``keys`` if any is active, else none.

    Raises:
        ConfigurationError: No active key, and ``host`` is not loopback.

    Added in 0.8.0.
    """
    required = keys if keys is not None and keys.has_active_keys() else None
    if required is None and not is_loopback(host):
        raise ConfigurationError(
            f"smyth mcp serve --transport http on {host} without API keys would let anyone "
            "who reaches it start runs and decide approvals: create keys (smyth keys create "
            "--tenant T --role approver --name N) or bind 127.0.0.1"
        )
    return required


async def serve_mcp(
    agents: AgentClient,
    served: Sequence[str],
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    keys: KeyStore | None = None,
) -> None:
    """Serve ``served`` agents to MCP clients until the process is stopped.

    Args:
        agents: The client the tools call.
        served: The agents' workflow type names.
        transport: ``stdio`` (a client runs this process) or ``http`` (streamable
            HTTP at ``http://host:port/path``).
        host: The address to bind, for ``http``.
        port: The TCP port, for ``http``.
        path: The endpoint's path, for ``http``.
        keys: For ``http``: the API keys every request must present (each call acts
            as its key); ``None`` or a file without an active key: no keys, which
            only a loopback ``host`` allows.

    Raises:
        ConfigurationError: ``http`` without keys on an address other machines reach.

    Added in 0.3.0. Changed in 0.8.0: ``keys``; keyless HTTP is loopback only.
    """
    if transport == "stdio":
        await agents_mcp_server(agents, served).run_stdio_async()
        return
    required = http_keys(host, keys)
    server = agents_mcp_server(agents, served, keys=required)
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    asgi = app if required is None else RequireKey(app, required)
    config = uvicorn.Config(asgi, host=host, port=port, log_config=None, access_log=False)
    await uvicorn.Server(config).serve()
