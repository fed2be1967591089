"""Record the workflow histories that ``tests/agent/test_replay.py`` replays.

From the repository root::

    .venv/bin/python -m tests.helpers.record_histories                 # every scenario
    .venv/bin/python -m tests.helpers.record_histories analyst_bad_output  # just some

It starts a Temporal dev server, runs each scenario below with the agents of
``tests/helpers/agents.py`` and a ``ScriptedModel``, and writes the run's history to
``tests/histories/<scenario>.json`` (``WorkflowHistory.to_json()``; the workflow id is
``history-<scenario>``).

Re-record a history only on purpose, when a change is *meant* to break old runs (and
ships as a new agent version): these files stand for runs that were in flight when
the code changed, and the replay test exists to say when new code cannot continue them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from smyth_temporal import AgentClient, AgentInput, AgentWorkflow, configure_logging
from smyth_temporal.activities import tool_activities
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.context import DEFAULT_SUMMARY_INSTRUCTIONS
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.models import ModelRequest, ModelResponse, default_provider
from smyth_temporal.settings import ModelSettings
from smyth_temporal.testing import (
    AnthropicTurn,
    FakeAnthropicServer,
    ScriptedModel,
    ScriptStep,
    agent_worker,
    anthropic_error,
    anthropic_turn,
    raw_tool_call,
    reply,
    start_dev_environment,
    tool_call,
)
from smyth_temporal.types import AgentEvent, Message, ToolCall, TurnStarted
from smyth_temporal.types.approvals import APPROVAL_SIGNAL, ApprovalDecision
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice
from smyth_temporal.types.sessions import session_workflow_id
from tests.helpers.agents import Analyst, Rater, Summarizer, read_ledger
from tests.helpers.budget_agents import PRICES_TOML, AskingSpender
from tests.helpers.context_agents import Concierge, Digest, Relay
from tests.helpers.fallback_agents import ClaudeCompactingWithFallback
from tests.helpers.mcp_agents import Clock
from tests.helpers.mcp_servers import time_server
from tests.helpers.memory_agents import Researcher
from tests.helpers.policy_agents import Treasurer
from tests.helpers.reconcile_agents import Payer, Postman, abandoned_send
from tests.helpers.trader import Trader
from tests.helpers.trading import LEDGER_ENV, sell
from tests.helpers.worker_process import spawn_worker

HISTORIES = Path(__file__).parents[1] / "histories"


def workflow_id(scenario: str) -> str:
    return f"history-{scenario}"


def tool_results(request: ModelRequest) -> ModelResponse:
    return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def same_id(*turns: ModelResponse) -> ModelResponse:
    """One turn with the calls of ``turns``, all given the id ``dup``."""
    calls = [c.model_copy(update={"id": "dup"}) for t in turns for c in t.message.tool_calls]
    return turns[0].model_copy(
        update={"message": turns[0].message.model_copy(update={"tool_calls": calls})}
    )


# Scenario name -> (agent, prompt, model script).
SCRIPTED: dict[str, tuple[type[AgentWorkflow], str, Sequence[ScriptStep]]] = {
    # Several tools of every effect class over four steps.
    "analyst_multi_tool": (
        Analyst,
        "Buy the cheaper stock",
        [
            [tool_call("get_quote", symbol="ACME"), tool_call("get_quote", symbol="GLOBEX")],
            tool_call("place_order", order={"symbol": "ACME", "quantity": 3}),
            tool_call("write_note", text="bought 3 ACME"),
            tool_results,
        ],
    ),
    # Malformed JSON, wrong arguments, an unknown tool, a tool that fails after its
    # retries (an ActivityTaskFailed event), then a good call.
    "analyst_bad_output": (
        Analyst,
        "Check ACME",
        [
            raw_tool_call("get_quote", '{"symbol": "ACME"'),
            tool_call("get_quote", symbol=42, extra="x"),
            tool_call("get_weather", city="Paris"),
            tool_call("always_fails", reason="disk on fire"),
            tool_call("get_quote", symbol="ACME"),
            tool_results,
        ],
    ),
    # One turn mixing read-only and side-effecting calls: two quotes run together,
    # then the order alone, then a lookup and a quote together.
    "analyst_concurrent_reads": (
        Analyst,
        "Look at everything, buy GLOBEX",
        [
            [
                tool_call("get_quote", symbol="ACME"),
                tool_call("get_quote", symbol="GLOBEX"),
                tool_call("place_order", order={"symbol": "GLOBEX", "quantity": 1}),
                tool_call("slow_lookup", symbol="GLOBEX", seconds=0.2),
                tool_call("get_quote", symbol="INITECH"),
            ],
            tool_results,
        ],
    ),
    # The step limit ends the run with status max_steps.
    "analyst_max_steps": (
        Analyst,
        "Loop forever",
        [tool_call("get_quote", symbol="ACME")] * Analyst.config.max_steps,
    ),
    # Turns whose calls share one id (as some OpenAI-compatible servers return them):
    # two quotes together, then two orders, each keyed by its own unique id.
    "analyst_duplicate_ids": (
        Analyst,
        "Quote two, buy two",
        [
            same_id(tool_call("get_quote", symbol="ACME"), tool_call("get_quote", symbol="GLOBEX")),
            same_id(
                tool_call("place_order", order={"symbol": "ACME", "quantity": 1}),
                tool_call("place_order", order={"symbol": "GLOBEX", "quantity": 1}),
            ),
            tool_results,
        ],
    ),
    # A typed answer (output_type=Verdict): not JSON at first, corrected on request.
    "rater_typed_output": (
        Rater,
        "Rate ACME",
        [
            tool_call("get_quote", symbol="ACME"),
            reply("ACME looks good, buy."),
            reply('{"symbol": "ACME", "action": "buy", "confidence": 0.8}'),
        ],
    ),
    # A custom loop built from the building blocks.
    "summarizer_custom": (
        Summarizer,
        "Summarize INITECH",
        [tool_call("get_quote", symbol="INITECH"), tool_results],
    ),
}

CRASH_SCENARIO = "analyst_crash_recovered"
"""A run whose worker was SIGKILLed during a tool call and finished by another: its
history has the sticky-queue workflow task timeout and the re-run activity."""

STREAMED_SCENARIOS = ("analyst_streamed", "analyst_streamed_live", "analyst_live_channel")
"""A run streamed to a reader: as recorded by 0.3.0 (the model activity's delta signals
and the reader's poll updates in its history), as recorded by 0.6.0 (the deltas in the
turn's live channel, the polls), and the live channel of its answer."""

LONG_RUN_SCENARIOS = ("digest_compacted", "relay_last_run", "concierge_session")
"""Runs of the weeks-long machinery: compaction with its archive, the last run of a
continue-as-new chain (it starts from a checkpoint), and a session's messages."""

MCP_SCENARIO = "clock_mcp"
"""Clock on ``mcp-server-time``: the recorded tool list (0.3.0), then two read-only MCP
calls scheduled together."""

BUDGET_SCENARIO = "spender_asks_over_budget"
"""A priced run past its ``max_cost`` that asks to go on (0.5.0): approved once with an
edited amount, then rejected; its model calls carry their cost."""

APPROVAL_SCENARIO = "trader_approved"
"""Trader parks for a person's decision, then sells: its status and pending request
published to visibility as it parks, when it is decided, and when it ends (0.7.0)."""

CALL_IDS_SCENARIO = "trader_model_ids"
"""Trader gets three sells the model called ``a``, ``a`` and ``a~2``: the workflow names
them ``call_1_0..2`` (patch ``smyth-call-ids``), each approved by its own request (0.8.0)."""

SIGNALLED_SCENARIO = "trader_signalled_with_request"
"""Trader's decision, signalled while no worker ran, reaches the run with the model
call's completion that makes its request: held to the end of that activation and
applied (patch ``smyth-signalled-decisions``, 0.8.0), every task replayed."""

QUORUM_SCENARIO = "treasurer_quorum"
"""Treasurer's payment under a two-approver ``ApprovalPolicy``: alice's approval counted
(still pending), bob's settles it, the payment runs (patch ``smyth-approval-policy``,
0.9.0); the run publishes its quorum progress (``SmythApprovalProgress``)."""

FALLBACK_SCENARIO = "claude_fallbacks"
"""``ClaudeCompactingWithFallback`` on the fake Anthropic API: its first turn and its
compaction's summary each find the primary model overloaded and move to the backup
(patches ``smyth-fallback-models`` and ``smyth-summary-fallback``, 0.10.0)."""

RECONCILE_SCENARIOS = ("postman_reconciled", "payer_unknown_retry")
"""Reconcile hooks (patch ``smyth-reconcile``, 0.10.0): ``Postman`` rewound past three
sends (ann's done and reused, bob's not done and sent, cy's unknown, approved and sent);
``Payer``'s transfer whose retry cannot be told (approved, run again)."""

FORK_MEMORY_SCENARIO = "researcher_forked_memory"
"""A fork of a Researcher run at step 2 (remembered at steps 1 and 3) that recalls and
remembers in its own memory view (patch ``smyth-fork-memory``, 0.9.0)."""

SCENARIOS = (
    *SCRIPTED,
    CRASH_SCENARIO,
    *STREAMED_SCENARIOS,
    *LONG_RUN_SCENARIOS,
    MCP_SCENARIO,
    BUDGET_SCENARIO,
    APPROVAL_SCENARIO,
    CALL_IDS_SCENARIO,
    SIGNALLED_SCENARIO,
    QUORUM_SCENARIO,
    FORK_MEMORY_SCENARIO,
    FALLBACK_SCENARIO,
    *RECONCILE_SCENARIOS,
)


async def record_scripted(client: Client, scenario: str) -> str:
    agent, prompt, steps = SCRIPTED[scenario]
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    async with agent_worker(client, agent, model=ScriptedModel(steps), task_queue=task_queue):
        handle = await agents.start(agent, AgentInput(prompt=prompt), id=workflow_id(scenario))
        await agents.result(handle.id)
    return (await handle.fetch_history()).to_json()


async def streamed_run(
    client: Client, scenario: str
) -> tuple[WorkflowHandle[Any, Any], list[AgentEvent]]:
    """A quote, then an answer streamed word by word while a reader follows the run."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    words = "ACME trades at 101.5, up two percent on the week; hold."
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(words)], piece_delay=0.05)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(
            Analyst, AgentInput(prompt="How is ACME?"), id=workflow_id(scenario)
        )
        events = [event async for event in agents.events(handle.id)]
        await agents.result(handle.id)
    kinds = [event.kind for event in events]
    if kinds.count("text_delta") < 2:
        raise RuntimeError(f"the answer was not streamed in pieces: {kinds}")
    return handle, events


async def record_streamed(client: Client, scenario: str) -> str:
    """The streamed run's own history: no delta in it (0.6.0), the reader's polls."""
    handle, _ = await streamed_run(client, scenario)
    return (await handle.fetch_history()).to_json()


async def record_live_channel(client: Client, scenario: str) -> str:
    """The live channel of the streamed run's answer: its delta signals and close."""
    _, events = await streamed_run(client, scenario)
    channel = [e.live.workflow_id for e in events if isinstance(e, TurnStarted) and e.live][-1]
    return (await client.get_workflow_handle(channel).fetch_history()).to_json()


async def record_crash(client: Client, scenario: str) -> str:
    """The ``crash-tool`` script of ``tests.helpers.worker_process``, killed mid lookup."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    with tempfile.TemporaryDirectory() as scratch:
        ledger = Path(scratch) / "ledger.jsonl"
        spawn = functools.partial(
            spawn_worker,
            address=client.service_client.config.target_host,
            task_queue=task_queue,
            ledger=ledger,
            script="crash-tool",
            log=Path(scratch) / "workers.log",
        )
        first = await spawn()
        try:
            handle = await agents.start(Analyst, "Buy ACME", id=workflow_id(scenario))
            while not any(e["tool"] == "slow_lookup.start" for e in read_ledger(ledger)):
                await asyncio.sleep(0.02)
            first.kill()
            second = await spawn()
            try:
                await agents.result(handle.id)
            finally:
                await second.stop()
        finally:
            await first.stop()
    return (await handle.fetch_history()).to_json()


async def record_digest(client: Client, scenario: str) -> str:
    """Digest reads eight long reports: its 1,500-token budget compacts twice."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    steps = [*(tool_call("daily_report", day=day) for day in range(1, 9)), reply("digested")]
    with tempfile.TemporaryDirectory() as scratch:
        memory = MemoryManager(EdgeStore(Path(scratch) / "memory"), HashEmbedder(64))
        async with agent_worker(
            client, Digest, model=ScriptedModel(steps), task_queue=task_queue, memory=memory
        ):
            handle = await agents.start(Digest, "Digest the reports.", id=workflow_id(scenario))
            await agents.result(handle.id)
        await memory.close()
    return (await handle.fetch_history()).to_json()


async def record_relay(client: Client, scenario: str) -> str:
    """The last run of a chain that continued as new after every two steps."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    steps = [*(tool_call("daily_report", day=day) for day in range(1, 5)), reply("relayed")]
    async with agent_worker(client, Relay, model=ScriptedModel(steps), task_queue=task_queue):
        handle = await agents.start(Relay, "Read the reports.", id=workflow_id(scenario))
        await agents.result(handle.id)
    last = client.get_workflow_handle(handle.id)  # the latest run of the chain
    return (await last.fetch_history()).to_json()


async def record_session(client: Client, scenario: str) -> str:
    """A session: two messages (one with a tool call), then closed."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    steps = [reply("hello"), tool_call("daily_report", day=1), reply("read"), reply("bye")]
    async with agent_worker(client, Concierge, model=ScriptedModel(steps), task_queue=task_queue):
        await agents.send(Concierge, scenario, "hi")
        await agents.send(Concierge, scenario, "report for day 1")
        await agents.close_session(Concierge, scenario)
        session = session_workflow_id("Concierge", "default", scenario)
        await agents.result(session)
    return (await client.get_workflow_handle(session).fetch_history()).to_json()


async def record_mcp(client: Client, scenario: str) -> str:
    """Two time questions in one turn, answered by the real ``mcp-server-time``."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    turn = [
        tool_call("get_current_time", timezone="Europe/Paris"),
        tool_call(
            "convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"
        ),
    ]
    model = ScriptedModel([turn, tool_results])
    servers = {"time": time_server()}
    async with agent_worker(client, Clock, model=model, task_queue=task_queue, mcp_servers=servers):
        handle = await agents.start(
            Clock, "Paris now, and noon UTC in Tokyo?", id=workflow_id(scenario)
        )
        await agents.result(handle.id)
    return (await handle.fetch_history()).to_json()


async def record_budget(client: Client, scenario: str) -> str:
    """``AskingSpender``: over 1.5 after two quotes, let go on for 1.0, stopped at 3.0."""
    prices = Path(tempfile.mkdtemp()) / "prices.toml"
    prices.write_text(PRICES_TOML)
    os.environ["SMYTH_PRICES_FILE"] = str(prices)  # read when the worker starts
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    quote = tool_call("get_quote", symbol="ACME")
    model = ScriptedModel([quote] * 4 + [reply("Done.")])
    try:
        async with agent_worker(client, AskingSpender, model=model, task_queue=task_queue):
            handle = await agents.start(
                AskingSpender, AgentInput(prompt="Keep quoting."), id=workflow_id(scenario)
            )
            for decision in ("approve", "reject"):
                while not (request := (await agents.state(handle.id)).pending_approvals):
                    await asyncio.sleep(0.05)
                if decision == "approve":
                    edited = {**request[0].arguments, "extra": 1.0}
                    await agents.approve(handle.id, by="ops", arguments=edited)
                else:
                    await agents.reject(handle.id, by="ops", comment="enough")
            result = await agents.result(handle.id)
    finally:
        del os.environ["SMYTH_PRICES_FILE"]
    if (result.status, result.usage.cost) != ("over_budget", 3.0):
        raise RuntimeError(f"unexpected outcome: {result.status}, cost {result.usage.cost}")
    return (await handle.fetch_history()).to_json()


async def record_approval(client: Client, scenario: str) -> str:
    """``Trader``: a sale that waits for a decision, approved by a person."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=7), tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(
            Trader, AgentInput(prompt="Sell ACME"), id=workflow_id(scenario)
        )
        while not (await agents.state(handle.id)).pending_approvals:
            await asyncio.sleep(0.05)
        await agents.approve(handle.id, by="ops")
        result = await agents.result(handle.id)
    if result.status != "completed":
        raise RuntimeError(f"unexpected outcome: {result.status}")
    return (await handle.fetch_history()).to_json()


async def record_quorum(client: Client, scenario: str) -> str:
    """``Treasurer``: a payment two people must approve, approved by alice then bob."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    model = ScriptedModel([tool_call("pay", amount=20_000, to="acme"), tool_results])
    async with agent_worker(client, Treasurer, model=model, task_queue=task_queue):
        handle = await agents.start(
            Treasurer, AgentInput(prompt="Pay acme", started_by="ops"), id=workflow_id(scenario)
        )
        while not (state := await agents.state(handle.id)).pending_approvals:
            await asyncio.sleep(0.05)
        request = state.pending_approvals[0]
        for approver in ("alice", "bob"):
            await agents.approve(
                handle.id, request.id, by=approver, arguments_sha256=request.arguments_sha256
            )
        result = await agents.result(handle.id)
    if result.status != "completed" or result.output != "paid 20000 to acme":
        raise RuntimeError(f"unexpected outcome: {result.status} {result.output!r}")
    return (await handle.fetch_history()).to_json()


async def record_model_ids(client: Client, scenario: str) -> str:
    """``Trader``: three gated sells under colliding model ids, each approved by its id."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    sells = [
        ToolCall(id=i, name="sell", arguments=f'{{"symbol": "ACME", "quantity": {n}}}')
        for n, i in enumerate(["a", "a", "a~2"], start=1)
    ]
    turn = ModelResponse(message=Message(role="assistant", tool_calls=sells))
    model = ScriptedModel([turn, tool_results])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, AgentInput(prompt="Sell"), id=workflow_id(scenario))
        while len(pending := (await agents.state(handle.id)).pending_approvals) < 3:
            await asyncio.sleep(0.05)
        for request in pending:
            await agents.approve(handle.id, request.id, by="ops")
        result = await agents.result(handle.id)
    if result.status != "completed":
        raise RuntimeError(f"unexpected outcome: {result.status}")
    return (await handle.fetch_history()).to_json()


async def record_signalled(client: Client, scenario: str) -> str:
    """``Trader``: the decision signalled in the task that makes its request (see above)."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=4), tool_results])
    id = workflow_id(scenario)
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, no_remote_activities=True
    ):
        handle = await agents.start(Trader, AgentInput(prompt="Sell ACME"), id=id)
        await _until(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    activities = [ModelActivities(model).complete, *tool_activities([sell])]
    async with Worker(client, task_queue=task_queue, activities=activities):
        await _until(handle, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    decision = ApprovalDecision(request_id="apr-1-call_1_0", approved=True, by="ops")
    await handle.signal(APPROVAL_SIGNAL, decision)
    async with agent_worker(
        client, Trader, model=model, task_queue=task_queue, max_cached_workflows=0
    ):
        result = await agents.result(handle.id)
    if result.status != "completed":
        raise RuntimeError(f"unexpected outcome: {result.status}")
    return (await handle.fetch_history()).to_json()


async def record_fork_memory(client: Client, scenario: str) -> str:
    """The fork's history: it starts from the parent's step-2 checkpoint, recalls (with its
    view), remembers (in its branch) and answers; its episode goes to its branch too."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    parent_turns = [
        tool_call("remember", text="ACME reports earnings on May 3", kind="fact"),
        tool_call("get_quote", symbol="ACME"),
        tool_call("remember", text="ACME's CFO resigned", kind="fact"),
        reply("ACME noted."),
    ]
    fork_turns = {
        3: tool_call("recall", query="ACME", k=10),
        4: tool_call("remember", text="GLOBEX is the better buy", kind="fact"),
        5: reply("Compared."),
    }

    def turn(request: ModelRequest) -> ModelResponse:
        # A scripted model answers by step: the fork's steps 3-5 by what it was told.
        if any(m.content == "Compare with GLOBEX." for m in request.messages):
            return fork_turns[request.step]
        return parent_turns[request.step - 1]

    steps = [turn] * 5
    with tempfile.TemporaryDirectory() as scratch:
        memory = MemoryManager(EdgeStore(Path(scratch) / "memory"), HashEmbedder(64))
        async with agent_worker(
            client, Researcher, model=ScriptedModel(steps), task_queue=task_queue, memory=memory
        ):
            parent = await agents.start(
                Researcher, "Learn about ACME", id=f"{workflow_id(scenario)}-parent"
            )
            await agents.result(parent.id)
            fork = await agents.fork(
                parent.id, at_step=2, prompt="Compare with GLOBEX.", id=workflow_id(scenario)
            )
            result = await agents.result(fork.id)
        await memory.close()
    if result.output != "Compared.":
        raise RuntimeError(f"unexpected outcome: {result.status} {result.output!r}")
    return (await fork.fetch_history()).to_json()


async def record_fallbacks(client: Client, scenario: str) -> str:
    """A turn and a summary that move from an overloaded model to the fallback."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    turns = 0

    def respond(body: dict[str, Any]) -> AnthropicTurn:
        nonlocal turns
        summary = DEFAULT_SUMMARY_INSTRUCTIONS[:40] in str(body.get("system"))
        if body["model"] == "claude-primary" and (summary or turns == 0):
            return anthropic_error(529, "overloaded_error", "Overloaded")
        if summary:
            return anthropic_turn(f"Quoted {turns} symbols so far.")
        turns += 1
        if turns <= 4:
            symbol = ["ACME", "GLOBEX", "INITECH", "ACME"][turns - 1]
            notes = "I weigh the sector and yesterday's close before I quote. " * 20
            return anthropic_turn(notes, [(f"toolu_{turns}", "get_quote", {"symbol": symbol})])
        return anthropic_turn("All quoted.")

    with tempfile.TemporaryDirectory() as scratch:
        memory = MemoryManager(EdgeStore(Path(scratch) / "memory"), HashEmbedder(64))
        async with FakeAnthropicServer(respond=respond) as fake:
            settings = ModelSettings.load(
                anthropic_api_key="sk-ant-histories",
                anthropic_base_url=fake.base_url,
                openai_api_key="sk-histories",
            )
            async with agent_worker(
                client,
                ClaudeCompactingWithFallback,
                model=default_provider(settings),
                task_queue=task_queue,
                memory=memory,
            ):
                handle = await agents.start(
                    ClaudeCompactingWithFallback, "Quote the symbols.", id=workflow_id(scenario)
                )
                result = await agents.result(handle.id)
                compactions = (await agents.state(handle.id)).compactions
        await memory.close()
    if result.status != "completed" or not compactions:
        raise RuntimeError(f"unexpected outcome: {result.status}, {len(compactions)} compactions")
    return (await handle.fetch_history()).to_json()


async def record_reconcile(client: Client, scenario: str) -> str:
    """``Postman`` or ``Payer`` (``tests.helpers.reconcile_agents``): one approval each."""
    task_queue = f"smyth-histories-{scenario}"
    agents = AgentClient(client, task_queue=task_queue)
    ledger = Path(tempfile.mkdtemp()) / "ledger.jsonl"
    os.environ[LEDGER_ENV] = str(ledger)
    recipients = ("ann", "bob", "cy")
    if scenario == "postman_reconciled":
        agent: type[AgentWorkflow] = Postman
        steps: list[ScriptStep] = [
            [tool_call("send", to=to, text="hi") for to in recipients],
            tool_results,
        ]
        notice = RewindNotice(
            to_step=0,
            abandoned_run_id="abandoned",
            side_effects=tuple(abandoned_send(to, i) for i, to in enumerate(recipients)),
        )
        start: dict[str, Any] = {"start_signal": REWIND_SIGNAL, "start_signal_args": [notice]}
    else:
        agent, steps, start = Payer, [tool_call("transfer", amount=5000), tool_results], {}
    try:
        async with agent_worker(client, agent, model=ScriptedModel(steps), task_queue=task_queue):
            handle = await client.start_workflow(
                agent.__name__,
                AgentInput(prompt="Go"),
                id=workflow_id(scenario),
                task_queue=task_queue,
                **start,
            )
            while not (state := await agents.state(handle.id)).pending_approvals:
                await asyncio.sleep(0.05)
            await agents.approve(handle.id, state.pending_approvals[0].id, by="ops")
            result = await agents.result(handle.id)
    finally:
        del os.environ[LEDGER_ENV]
    sent = [e for e in read_ledger(ledger) if e["tool"] in ("send", "transfer.acted")]
    if result.status != "completed" or len(sent) != 2:
        raise RuntimeError(f"unexpected outcome: {result.status}, {sent}")
    return (await handle.fetch_history()).to_json()


async def _until(handle: WorkflowHandle[Any, Any], kind: EventType.ValueType) -> None:
    while not any(e.event_type == kind for e in (await handle.fetch_history()).events):
        await asyncio.sleep(0.05)


RECORDERS: dict[str, Callable[[Client, str], Awaitable[str]]] = {
    **dict.fromkeys(SCRIPTED, record_scripted),
    CRASH_SCENARIO: record_crash,
    "digest_compacted": record_digest,
    "relay_last_run": record_relay,
    "concierge_session": record_session,
    # analyst_streamed (0.3.0) cannot be recorded again: its deltas now go elsewhere.
    "analyst_streamed_live": record_streamed,
    "analyst_live_channel": record_live_channel,
    MCP_SCENARIO: record_mcp,
    BUDGET_SCENARIO: record_budget,
    APPROVAL_SCENARIO: record_approval,
    CALL_IDS_SCENARIO: record_model_ids,
    SIGNALLED_SCENARIO: record_signalled,
    QUORUM_SCENARIO: record_quorum,
    FORK_MEMORY_SCENARIO: record_fork_memory,
    FALLBACK_SCENARIO: record_fallbacks,
    **dict.fromkeys(RECONCILE_SCENARIOS, record_reconcile),
}


async def main(names: Sequence[str]) -> None:
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    # Only problems: the scenarios fail tools and activities on purpose.
    configure_logging("ERROR")
    # Recorded histories must carry their payloads inline: the store does not ship.
    os.environ["SMYTH_PAYLOAD_STORAGE"] = "off"
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    env = await start_dev_environment()
    try:
        HISTORIES.mkdir(exist_ok=True)
        for name in names or SCENARIOS:
            text = await RECORDERS[name](env.client, name)
            path = HISTORIES / f"{name}.json"
            path.write_text(text + "\n")
            print(f"wrote {path.relative_to(Path.cwd())} ({len(text):,} bytes)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
    # temporalio's Rust threads can outlive the interpreter and abort its teardown
    # ("PyGILState_Release ... finalizing", temporalio/sdk-python#300); everything is
    # written and flushed by now, so skip the teardown.
    sys.stdout.flush()
    os._exit(0)
