"""Bounds on the model's tool arguments: size and depth, refused before anything walks them.

Every walker of arguments in workflow code recurses (the JSON parsers, the schema
check, the approval hash, the payload converter): a model that nests 5,000 brackets
made one raise ``RecursionError`` in workflow code, and the workflow task failed
forever. Arguments are sized without recursion first; what is too large or too deep
is answered to the model as the call's error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentConfig, AgentInput, tool
from smyth_temporal.agent import WorkflowLogger
from smyth_temporal.agent.approvals import Approvals
from smyth_temporal.agent.tooling import ToolRunner
from smyth_temporal.exceptions import ToolArgumentsError
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.testing import ScriptedModel, agent_worker, raw_tool_call, reply
from smyth_temporal.tools import MCPTool, Tool, value_depth
from smyth_temporal.tools._jsonschema import schema_problems
from smyth_temporal.tools._tool import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH, json_depth
from smyth_temporal.types import ToolCall, arguments_sha256
from tests.helpers.mcp_agents import Clock
from tests.helpers.mcp_servers import time_server
from tests.helpers.runs import bare_run


@tool
async def anything(payload: Any) -> str:
    """Takes any JSON."""
    return "ok"


MCP = MCPTool.listed(
    server="s", mcp_name="m", name="m", description="d", input_schema={"type": "object"}
)


def nested(depth: int) -> str:
    """Arguments whose ``payload`` nests lists so that the whole is ``depth`` deep."""
    inner = depth - 1
    return '{"payload":' + "[" * inner + "]" * inner + "}"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from('ab[]{}"\\/\n'), max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet='k[{"\\', max_size=4), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=10 * settings.default.max_examples)  # pure: cheap
@given(value=JSON_VALUES)
def test_json_text_is_sized_as_deep_as_its_value(value: Any) -> None:
    # Brackets and quotes inside strings never count: the scan agrees with the parse.
    for text in (json.dumps(value), json.dumps(value, indent=1, ensure_ascii=False)):
        assert json_depth(text) == value_depth(value, 1_000)


@pytest.mark.parametrize("spec", [anything, MCP], ids=["tool", "mcp"])
@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH + 1, 1_000, 5_000, 100_000])
def test_deeply_nested_arguments_are_refused_before_any_parser_walks_them(
    spec: Any, depth: int
) -> None:
    with pytest.raises(ToolArgumentsError, match=f"nested more than {MAX_ARGUMENT_DEPTH}"):
        spec.validate_arguments(nested(depth))


@pytest.mark.parametrize("spec", [anything, MCP], ids=["tool", "mcp"])
def test_arguments_at_the_bounds_are_accepted_and_hashable(spec: Any) -> None:
    arguments = spec.validate_arguments(nested(MAX_ARGUMENT_DEPTH))
    assert value_depth(arguments, 1_000) == MAX_ARGUMENT_DEPTH
    assert len(arguments_sha256(arguments)) == 64
    big = json.dumps({"payload": "x" * (MAX_ARGUMENT_CHARS - 20)})
    assert spec.validate_arguments(big)["payload"].startswith("x")


@pytest.mark.parametrize("spec", [anything, MCP], ids=["tool", "mcp"])
def test_oversized_arguments_are_refused(spec: Any) -> None:
    huge = json.dumps({"payload": "x" * MAX_ARGUMENT_CHARS})
    with pytest.raises(ToolArgumentsError, match="characters long, at most"):
        spec.validate_arguments(huge)


@pytest.mark.parametrize("spec", [anything, MCP], ids=["tool", "mcp"])
def test_deep_edited_arguments_are_refused_too(spec: Any) -> None:
    # An approver's edit arrives as a value, not text: it is measured without recursion.
    value: Any = []
    for _ in range(5_000):
        value = [value]
    with pytest.raises(ToolArgumentsError, match="nested more than"):
        spec.validate_arguments({"payload": value})


@pytest.mark.parametrize("patched", [True, False], ids=["new run", "run from 0.7"])
async def test_runs_started_before_the_bounds_replay_their_calls_unbounded(patched: bool) -> None:
    # A recorded call past the bounds ran (or asked for approval) in 0.7: replaying it
    # must do the same, so the bound is asked of workflow.patched, only when it applies.
    ran: list[dict[str, Any]] = []

    async def execute(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        ran.append(arguments)
        return "ok"

    gated = dataclasses.replace(anything, executor="fake", requires_approval=True)
    free = dataclasses.replace(anything, name="free", executor="fake")
    asked: list[str] = []

    def is_patched(patch: str) -> bool:
        asked.append(patch)
        return patched

    config = AgentConfig(model="m", tools=[gated, free])
    run = bare_run(config, input=AgentInput(tenant="t"), log=WorkflowLogger("tests.tool_arguments"))
    approvals = Approvals(
        run,
        on_change=lambda: None,
        patched=is_patched,
        clock=lambda: datetime(2026, 11, 26, tzinfo=UTC),
    )
    runner = ToolRunner(
        run,
        approvals,
        executors={"fake": execute},
        workflow_id=lambda: "wf",
        first_run_id=lambda: "r",
        patched=is_patched,
    )
    deep = nested(MAX_ARGUMENT_DEPTH + 5)

    result = await runner.call(ToolCall(id="c1", name="free", arguments=deep))
    request = runner.request_approval(ToolCall(id="c2", name="anything", arguments=deep))

    assert asked.count("smyth-argument-bounds") == 2
    if patched:
        assert result.content is not None and "nested more than" in result.content
        assert ran == [] and request is None
    else:
        assert result.content == "ok" and len(ran) == 1 and request is not None


async def test_a_5000_deep_mcp_call_is_answered_to_the_model_and_the_run_goes_on(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        return reply(" | ".join(m.content or "" for m in request.messages if m.role == "tool"))

    deep = '{"timezone":' + "[" * 5_000 + "]" * 5_000 + "}"
    model = ScriptedModel([raw_tool_call("get_current_time", deep), answer])
    async with agent_worker(
        client, Clock, model=model, task_queue=task_queue, mcp_servers={"time": time_server()}
    ):
        handle = await agents.start(Clock, "What time is it?")
        # Before the bound, the workflow task failed on every attempt: no result came.
        result = await asyncio.wait_for(agents.result(handle.id), timeout=60)

    assert result.status == "completed"
    assert result.output.startswith("Error: Invalid arguments for tool 'get_current_time'")
    assert f"nested more than {MAX_ARGUMENT_DEPTH} levels deep" in result.output


def test_arguments_are_checked_against_the_input_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "repo_path": {"type": "string", "minLength": 1},
            "files": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "mode": {"enum": ["soft", "hard"]},
            "depth": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "ref": {"$ref": "#/$defs/Ref"},
        },
        "required": ["repo_path"],
        "additionalProperties": False,
        "$defs": {
            "Ref": {
                "type": "object",
                "properties": {"sha": {"type": "string"}},
                "required": ["sha"],
            }
        },
    }
    assert schema_problems({"repo_path": "/r", "depth": None, "ref": {"sha": "a"}}, schema) == []
    assert schema_problems({"repo_path": "/r", "depth": 2.0}, schema) == []  # 2.0 is an integer
    assert schema_problems(
        {"files": [], "mode": "mixed", "depth": 0, "ref": {}, "extra": True}, schema
    ) == [
        "repo_path: field required",
        "files: needs at least 1 items",
        "mode: must be one of 'soft', 'hard'",
        "depth: matches none of the allowed shapes (for example depth: must be at least 1)",
        "ref.sha: field required",
        "extra: extra field not permitted",
    ]
    assert schema_problems({"repo_path": True}, schema) == [
        "repo_path: expected string, got boolean"
    ]
