"""The durable agent loop against a real Temporal dev server."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, Message, ToolCall
from smyth_temporal.agent.tooling import idempotency_key
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, raw_tool_call, reply, tool_call
from tests.helpers.agents import Analyst, Summarizer, read_ledger


def tool_messages(request: ModelRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


async def test_multi_step_agent_with_several_tools(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    def final(request: ModelRequest) -> ModelResponse:
        quotes = tool_messages(request)
        return reply(f"ACME {quotes[0]}, GLOBEX {quotes[1]}; bought")

    model = ScriptedModel(
        [
            [tool_call("get_quote", symbol="ACME"), tool_call("get_quote", symbol="GLOBEX")],
            tool_call("place_order", order={"symbol": "ACME", "quantity": 3}),
            tool_call("write_note", text="bought 3 ACME"),
            final,
        ]
    )
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="Buy the cheaper stock"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    assert result.status == "completed"
    assert result.output == "ACME 101.5, GLOBEX 42.0; bought"
    assert result.steps == 4
    assert result.usage.requests == 4
    assert result.usage.tool_calls == 4
    assert result.usage.input_tokens == 40

    assert state.status == "completed"
    assert state.step == 4
    assert state.output == result.output
    assert state.pending_tool_calls == []
    roles = [m.role for m in state.messages]
    assert roles == [
        *("system", "user"),
        *("assistant", "tool", "tool"),
        *("assistant", "tool"),
        *("assistant", "tool"),
        "assistant",
    ]
    # Tool results answer their calls in the order the model made them.
    first_turn = state.messages[2]
    assert [m.tool_call_id for m in state.messages[3:5]] == [c.id for c in first_turn.tool_calls]
    assert state.messages[6].content == "bought 3 ACME"
    assert json.loads(state.messages[8].content or "") == {"saved": True, "chars": 13}

    # The model saw the system prompt, the task and the tool schemas.
    first = model.requests[0]
    assert first.messages[0].content == "You analyse markets."
    assert first.messages[1].content == "Buy the cheaper stock"
    schema = {t["function"]["name"]: t["function"] for t in first.tools}
    assert schema["get_quote"]["description"] == "Latest price for a ticker symbol."
    assert schema["get_quote"]["parameters"]["properties"]["symbol"]["description"] == (
        "The ticker, e.g. ACME."
    )
    assert schema["get_quote"]["parameters"]["required"] == ["symbol"]

    # Each call ran once, with a key made of the workflow id, the step and the call id.
    entries = read_ledger(ledger)
    assert sorted(e["tool"] for e in entries) == [
        "get_quote",
        "get_quote",
        "place_order",
        "write_note",
    ]
    order = next(e for e in entries if e["tool"] == "place_order")
    assert order["key"] == idempotency_key(
        handle.id, handle.first_execution_run_id or "", 2, "call_2_0"
    )
    assert len({e["key"] for e in entries}) == 4


async def test_bad_model_output_is_reported_to_the_model(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel(
        [
            raw_tool_call("get_quote", '{"symbol": "ACME"'),  # truncated JSON
            tool_call("get_quote", symbol=42, extra="x"),  # wrong type, unknown field
            tool_call("get_weather", city="Paris"),  # no such tool
            tool_call("always_fails", reason="disk on fire"),  # fails after retries
            tool_call("get_quote", symbol="ACME"),
            lambda request: reply(" | ".join(tool_messages(request))),
        ]
    )
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        result = await agents.run(Analyst, "Check ACME")

    errors = result.output.split(" | ")
    assert result.status == "completed"
    assert errors[0].startswith("Error: Invalid arguments for tool 'get_quote': (arguments):")
    assert "Invalid JSON" in errors[0]
    assert "symbol: Input should be a valid string" in errors[1]
    assert "extra: Extra inputs are not permitted" in errors[1]
    assert errors[2].startswith("Error: unknown tool 'get_weather'. Available tools: get_quote,")
    assert errors[3].startswith("Error: tool 'always_fails' failed:")
    assert "broken: disk on fire" in errors[3]
    assert errors[4] == "101.5"
    # Invalid calls never reached a tool; the valid one ran once.
    assert [e["tool"] for e in read_ledger(ledger)] == ["get_quote"]


async def test_max_steps_is_a_status_not_a_crash(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME")] * Analyst.config.max_steps)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        result = await agents.run(Analyst, "Loop forever")
    assert result.status == "max_steps"
    assert result.steps == Analyst.config.max_steps


async def test_custom_agent_composes_building_blocks(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel(
        [tool_call("get_quote", symbol="INITECH"), lambda r: reply(tool_messages(r)[0])]
    )
    async with agent_worker(client, Summarizer, model=model, task_queue=task_queue):
        result = await agents.run(Summarizer, "Summarize INITECH")
    assert result.output == "SUMMARY: 7.25"
    assert result.steps == 2
    # The summary turn offered no tools.
    assert model.requests[1].tools == []


def same_id_turn(*calls: tuple[str, dict[str, object]]) -> ModelResponse:
    """A turn whose calls all carry the id ``dup`` (as some servers return them)."""
    return ModelResponse(
        message=Message(
            role="assistant",
            tool_calls=[ToolCall(id="dup", name=n, arguments=json.dumps(a)) for n, a in calls],
        )
    )


async def test_calls_with_the_same_id_stay_apart(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    orders = [("place_order", {"order": {"symbol": s, "quantity": 1}}) for s in ("ACME", "INITECH")]
    model = ScriptedModel(
        [
            same_id_turn(("get_quote", {"symbol": "ACME"}), ("get_quote", {"symbol": "GLOBEX"})),
            same_id_turn(*orders),
            lambda request: reply(" | ".join(tool_messages(request))),
        ]
    )
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="Quote two, buy two"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)

    # Both calls of each turn ran, each once, with its own idempotency key.
    assert result.output.split(" | ")[:2] == ["101.5", "42.0"]
    entries = read_ledger(ledger)
    assert sorted(e["symbol"] for e in entries if e["tool"] == "place_order") == [
        "ACME",
        "INITECH",
    ]
    keys = [e["key"] for e in entries]
    assert len(keys) == len(set(keys)) == 4
    assert {k.rsplit("/", 1)[1] for k in keys} >= {"call_2_0", "call_2_1"}
    # Inside, the calls have the workflow's ids; towards the model, the one it gave.
    calls = state.messages[2].tool_calls
    assert [(c.id, c.wire_id) for c in calls] == [("call_1_0", "dup"), ("call_1_1", "dup")]
    assert {m.tool_call_id for m in state.messages if m.role == "tool"} == {"dup"}
