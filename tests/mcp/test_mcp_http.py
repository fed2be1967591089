"""MCP over streamable HTTP, against a server written here with the ``mcp`` SDK.

``ProbeServer`` records the idempotency key each call carries in ``_meta`` and fails on
purpose, so these tests see what Temporal retries (and with which key), what it does
not, and that a run keeps the tool list it recorded while the server changes.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from smyth_temporal import AgentClient, SmythPlugin, Tool
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.mcp_agents import Prober, RelayProber
from tests.helpers.mcp_servers import ProbeServer


def tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def offered(request: ModelRequest) -> list[str]:
    return sorted(t["function"]["name"] for t in request.tools)


@pytest.fixture
async def probe() -> ProbeServer:
    async with ProbeServer() as server:
        yield server  # type: ignore[misc]


async def test_transient_failures_are_retried_with_the_same_key(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    probe.http_failures, probe.charge_failures = 1, 1  # a 503, then an internal error
    model = ScriptedModel([tool_call("charge", amount=5), tool_results])
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, Prober, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(Prober, "Charge 5 cents.")
        kinds = [event.kind async for event in agents.events(handle.id)]
        result = await agents.result(handle.id)
    assert result.output == "charged 5"
    key = idempotency_key(handle.id, handle.first_execution_run_id or "", 1, "call_1_0")
    assert probe.calls == [("503:charge", key), ("charge", key), ("charge", key)]
    assert kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1


async def test_a_side_effect_is_not_retried_after_the_server_failed_it(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    probe.send_failures = 1
    model = ScriptedModel([tool_call("send", text="hi"), tool_results])
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, Prober, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        result = await agents.run(Prober, "Say hi.")
    assert result.output == (
        "Error: tool 'send' failed: MCPServerError: MCP server 'probe': mail relay broke mid-send "
        "(MCP error -32603)"
    )
    assert [name for name, _ in probe.calls] == ["send"]  # once: it may have acted


async def test_large_results_are_bounded_like_tool_output(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    model = ScriptedModel([tool_call("dump", size=50_000), tool_results])
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, Prober, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        result = await agents.run(Prober, "Dump.")
    limit = Tool.max_output_chars  # the default, which MCP tools keep
    assert result.output.startswith("x" * limit + "\n[output truncated: showing the first")
    assert result.output.endswith(f"{limit} of 50000 characters]")


async def test_the_http_session_reconnects_after_the_server_restarts(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    model = ScriptedModel([tool_call("lookup", key="a"), tool_results])  # per run
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, Prober, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        # A first run proves the worker's session is up (the worker connects in
        # the background once it starts, so stopping the server sooner races it).
        first = await agents.run(Prober, "Look a up.")
        await probe.stop()  # the server goes away under the open session
        await probe.start()
        second = await agents.run(Prober, "Look a up.")
    assert (first.output, second.output) == ("value of a", "value of a")


async def test_a_run_keeps_the_tool_list_it_recorded(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    seen: list[list[str]] = []

    def first(request: ModelRequest) -> ModelResponse:
        seen.append(offered(request))
        probe.add_tool("fresh")  # the server changes in the middle of the run
        return tool_call("lookup", key="k")

    def second(request: ModelRequest) -> ModelResponse:
        seen.append(offered(request))
        return tool_call("fresh", text="hello")

    model = ScriptedModel([first, second, tool_results])
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, Prober, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(Prober, "Use what you have.")
        result = await agents.result(handle.id)
        history = await handle.fetch_history()

        later: list[list[str]] = []

        def look(request: ModelRequest) -> ModelResponse:
            later.append(offered(request))
            return reply("ok")

        async with agent_worker(
            client,
            Prober,
            model=ScriptedModel([look]),
            task_queue=f"{task_queue}-2",
            mcp_servers=servers,
        ):
            await AgentClient(client, task_queue=f"{task_queue}-2").run(Prober, "Again.")

    assert seen == [["charge", "dump", "lookup", "send"]] * 2
    assert result.output.split(" | ") == [
        "value of k",
        "Error: unknown tool 'fresh'. Available tools: charge, send, dump, lookup.",
    ]
    assert later == [["charge", "dump", "fresh", "lookup", "send"]]  # a new run lists again

    # The recorded run replays against today's code without any server.
    replayed = await Replayer(workflows=[Prober], plugins=[SmythPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_a_continued_run_lists_the_tools_again(
    client: Client, agents: AgentClient, task_queue: str, probe: ProbeServer
) -> None:
    seen: list[list[str]] = []

    def first(request: ModelRequest) -> ModelResponse:
        seen.append(offered(request))
        probe.add_tool("fresh")
        return tool_call("lookup", key="k")

    def second(request: ModelRequest) -> ModelResponse:
        seen.append(offered(request))
        return tool_call("fresh", text="hello")

    model = ScriptedModel([first, second, tool_results])
    servers = {"probe": probe.config()}
    async with agent_worker(
        client, RelayProber, model=model, task_queue=task_queue, mcp_servers=servers
    ):
        handle = await agents.start(RelayProber, "Use what you have.")
        result = await agents.result(handle.id)
    assert seen == [
        ["charge", "dump", "lookup", "send"],
        ["charge", "dump", "fresh", "lookup", "send"],
    ]
    assert result.output == "value of k | fresh: hello"
