"""``@tool``: schemas from type hints, validation, definition errors, output bounds."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Literal

import pytest
from pydantic import BaseModel
from temporalio.client import Client
from temporalio.worker import Worker

from smyth_temporal import AgentConfig, ConfigurationError, ToolDefinitionError, tool, tool_context
from smyth_temporal.activities.tools import render_output, tool_activities
from smyth_temporal.exceptions import ToolArgumentsError, UserError
from tests.helpers import agents
from tests.helpers.tool_identity import ToolIdentity


class Order(BaseModel):
    symbol: str
    quantity: int


@tool(effect="side_effect", timeout=timedelta(seconds=9))
async def place_order(order: Order, urgency: Literal["low", "high"] = "low") -> str:
    """Place an order.

    A longer explanation that the model does not need.

    Args:
        order: What to buy,
            spread over two lines.
        urgency: How fast.

    Returns:
        A receipt.
    """
    return f"{order.quantity} {order.symbol} {urgency}"


def test_schema_from_type_hints_and_docstring() -> None:
    schema = place_order.schema()
    function = schema["function"]
    assert schema["type"] == "function"
    assert function["name"] == "place_order"
    assert function["description"] == (
        "Place an order.\n\nA longer explanation that the model does not need."
    )
    parameters = function["parameters"]
    assert parameters["required"] == ["order"]
    assert parameters["additionalProperties"] is False
    assert parameters["properties"]["order"]["description"] == (
        "What to buy, spread over two lines."
    )
    assert parameters["properties"]["urgency"]["enum"] == ["low", "high"]
    assert parameters["properties"]["urgency"]["default"] == "low"
    assert "Order" in parameters["$defs"]


def test_options() -> None:
    assert place_order.effect == "side_effect"
    assert not place_order.read_only
    assert place_order.timeout == timedelta(seconds=9)
    assert place_order.activity_name == "smyth.tool.place_order"


def test_validation_round_trip() -> None:
    arguments = place_order.validate_arguments('{"order": {"symbol": "ACME", "quantity": "3"}}')
    assert arguments == {"order": {"symbol": "ACME", "quantity": 3}, "urgency": "low"}
    kwargs = place_order.bind_arguments(arguments)
    assert kwargs["order"] == Order(symbol="ACME", quantity=3)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("{not json", "Invalid JSON"),
        ("[1, 2]", "Input should be an object"),
        ('{"order": {"symbol": "ACME"}}', "order.quantity: Field required"),
        ('{"order": {"symbol": "A", "quantity": 1}, "urgency": "now"}', "urgency: Input should be"),
        ('{"order": {"symbol": "A", "quantity": 1}, "price": 3}', "price: Extra inputs"),
    ],
)
def test_invalid_arguments_explain_themselves(raw: str, expected: str) -> None:
    with pytest.raises(ToolArgumentsError) as error:
        place_order.validate_arguments(raw)
    assert expected in str(error.value)
    assert "Expected a JSON object matching" in str(error.value)


def test_empty_arguments_mean_an_empty_object() -> None:
    @tool
    async def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.validate_arguments("") == {}


def test_definition_errors() -> None:
    def generator(x: int) -> Iterator[int]:
        yield x

    async def async_generator(x: int) -> AsyncIterator[int]:
        yield x

    async def untyped(x):  # type: ignore[no-untyped-def]
        return x

    async def variadic(*args: int) -> None:
        return None

    with pytest.raises(ToolDefinitionError, match="generator"):
        tool(generator)
    with pytest.raises(ToolDefinitionError, match="generator"):
        tool(async_generator)
    with pytest.raises(ToolDefinitionError, match="type hint"):
        tool(untyped)
    with pytest.raises(ToolDefinitionError, match="args"):
        tool(variadic)
    with pytest.raises(ToolDefinitionError, match="tool name"):
        tool(name="has spaces")(place_order.fn)
    with pytest.raises(ToolDefinitionError, match="effect"):
        tool(effect="dangerous")(place_order.fn)  # type: ignore[call-overload]


def test_tool_names_must_be_unique() -> None:
    other = tool(name="place_order")(place_order.fn)
    clash = tool(name="place_order")(_other_fn)
    with pytest.raises(ConfigurationError, match="duplicate"):
        AgentConfig(model="m", tools=[place_order, other])
    with pytest.raises(ToolDefinitionError, match="two different tools"):
        tool_activities([place_order, clash])
    assert len(tool_activities([place_order, other])) == 1


async def _other_fn(order: Order) -> str:
    return "other"


def test_config_validation() -> None:
    with pytest.raises(ConfigurationError, match="max_steps"):
        AgentConfig(model="m", max_steps=0)
    with pytest.raises(ConfigurationError, match="model"):
        AgentConfig(model="")
    with pytest.raises(ConfigurationError, match="@tool"):
        AgentConfig(model="m", tools=[_other_fn])  # type: ignore[list-item]


def test_render_output_bounds_size() -> None:
    assert render_output("short", 10).content == "short"
    assert json.loads(render_output({"a": [1, 2]}, 100).content) == {"a": [1, 2]}
    assert render_output(Order(symbol="A", quantity=1), 100).content == (
        '{"symbol":"A","quantity":1}'
    )
    big = render_output("x" * 50, 10)
    assert big.truncated
    assert big.content.startswith("x" * 10)
    assert "showing the first 10 of 50 characters" in big.content


async def test_direct_call_and_context_outside_agents() -> None:
    assert await place_order(Order(symbol="ACME", quantity=2)) == "2 ACME low"
    with pytest.raises(UserError, match="only available inside a tool"):
        tool_context()


async def test_a_plain_function_is_a_tool_run_in_a_thread() -> None:
    @tool
    def blocking_count(word: str) -> str:
        """Count a word's letters, blocking.

        Args:
            word: The word.
        """
        return f"{len(word)} in {threading.current_thread().name}"

    assert blocking_count.blocking and not place_order.blocking
    assert blocking_count.schema()["function"]["parameters"]["properties"] == {
        "word": {"description": "The word.", "title": "Word", "type": "string"}
    }
    counted = await blocking_count("ACME")
    assert counted.startswith("4 in smyth-tool")


async def test_a_sandboxed_run_reuses_the_workers_tools(client: Client, task_queue: str) -> None:
    """The sandbox re-imports an agent's module per run; its tools are not built again."""
    async with Worker(client, task_queue=task_queue, workflows=[ToolIdentity]):
        seen = [
            await client.execute_workflow(
                ToolIdentity.run, id=f"tool-identity-{n}-{task_queue}", task_queue=task_queue
            )
            for n in range(2)
        ]
    expected = [id(agents.get_quote), id(agents.get_quote.arguments_model)]
    assert seen == [expected, expected]
