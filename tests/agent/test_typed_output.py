"""Typed results: ``AgentConfig(output_type=...)`` on a real dev server.

The final answer is validated in the workflow; an answer that does not fit goes back
to the model with the validation errors; the typed value reaches ``AgentResult.data``,
a parent through ``delegate()``, and the real ``openai`` client path.
"""

from __future__ import annotations

import json

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentConfig, ConfigurationError
from smyth_temporal.models import ModelRequest, OpenAIProvider
from smyth_temporal.testing import (
    FakeOpenAIServer,
    ScriptedModel,
    agent_worker,
    chat_completion,
    reply,
    tool_call,
)
from tests.helpers.agents import Counter, Desk, Rater, Verdict

GOOD = {"symbol": "ACME", "action": "buy", "confidence": 0.8}


def last_user_text(request: ModelRequest) -> str:
    return next(m.content or "" for m in reversed(request.messages) if m.role == "user")


async def test_a_valid_answer_becomes_typed_data(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply(json.dumps(GOOD))])
    async with agent_worker(client, Rater, model=model, task_queue=task_queue):
        handle = await agents.start(Rater, "Rate ACME")
        result = await agents.result(handle.id, output_type=Verdict)
        plain = await agents.result(handle.id)

    assert (result.status, result.steps, result.data) == ("completed", 2, Verdict(**GOOD))
    assert json.loads(result.output) == GOOD
    assert plain.data == GOOD  # by workflow id alone: the JSON form
    # Every turn told the model the shape of the final answer.
    for request in model.requests:
        assert request.output is not None and request.output.name == "Verdict"
        assert request.output.json_schema == Verdict.model_json_schema()


async def test_an_answer_that_does_not_fit_is_corrected(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    fenced = "```json\n" + json.dumps({**GOOD, "action": "hold"}) + "\n```"
    model = ScriptedModel(
        [
            reply("ACME looks good, buy."),  # not JSON
            reply(json.dumps({**GOOD, "action": "short", "confidence": 2})),  # wrong values
            reply(fenced),  # right, in a code fence
        ]
    )
    async with agent_worker(client, Rater, model=model, task_queue=task_queue):
        result = await agents.run(Rater, "Rate ACME")

    assert (result.status, result.steps) == ("completed", 3)
    assert result.data == Verdict(**{**GOOD, "action": "hold"})
    first, second = (last_user_text(r) for r in model.requests[1:])
    assert first.startswith("Your final answer does not fit the required Verdict: (answer): ")
    assert "Invalid JSON" in first
    assert "action: Input should be 'buy', 'sell' or 'hold'" in second
    assert "confidence: Input should be less than or equal to 1" in second
    assert '"symbol"' in second  # the schema is repeated to the model


async def test_an_answer_that_never_fits_ends_with_a_clear_status(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([reply("buy"), reply("sell"), reply("hold")])
    async with agent_worker(client, Rater, model=model, task_queue=task_queue):
        result = await agents.run(Rater, "Rate ACME")
    assert (result.status, result.output, result.data, result.steps) == (
        "invalid_output",
        "hold",
        None,
        3,  # the answer and its two corrections (output_retries=2)
    )


@pytest.mark.parametrize(
    ("answer", "status", "data"),
    [
        ("42", "completed", 42),
        ("```\n7\n```", "completed", 7),
        ("forty-two", "invalid_output", None),
    ],
)
async def test_a_primitive_output_type(
    client: Client, agents: AgentClient, task_queue: str, answer: str, status: str, data: object
) -> None:
    model = ScriptedModel([reply(answer)])
    async with agent_worker(client, Counter, model=model, task_queue=task_queue):
        result = await agents.run(Counter, "How many?")
    assert (result.status, result.data) == (status, data)
    assert model.requests[0].output is not None
    assert model.requests[0].output.json_schema == {"type": "integer"}


async def test_delegate_returns_the_childs_typed_data(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([reply(json.dumps(GOOD))])
    async with agent_worker(client, Desk, Rater, model=model, task_queue=task_queue):
        result = await agents.run(Desk, "Rate ACME")
    assert result.output == "Verdict: Verdict(symbol='ACME', action='buy', confidence=0.8)"


def test_an_output_type_pydantic_cannot_validate_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"output_type .* cannot be validated"):
        AgentConfig(model="m", output_type=object())
    with pytest.raises(ConfigurationError, match="output_retries"):
        AgentConfig(model="m", output_type=int, output_retries=-1)


async def test_json_schema_response_format_through_the_openai_client(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    async with FakeOpenAIServer() as fake:
        fake.enqueue(chat_completion(json.dumps(GOOD)))
        provider = OpenAIProvider(base_url=fake.base_url, api_key="sk-test")
        async with agent_worker(client, Rater, model=provider, task_queue=task_queue):
            result = await agents.run(Rater, "Rate ACME")
        [request] = fake.requests

    assert result.data == Verdict(**GOOD)
    assert request.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema(), "strict": False},
    }
    assert "final_answer" not in {t["function"]["name"] for t in request.json["tools"]}


@pytest.mark.parametrize(
    ("agent", "arguments", "data"),
    [(Rater, GOOD, Verdict(**GOOD)), (Counter, {"value": 42}, 42)],
)
async def test_a_final_answer_tool_for_endpoints_without_structured_output(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    agent: type,
    arguments: dict[str, object],
    data: object,
) -> None:
    async with FakeOpenAIServer() as fake:
        fake.enqueue(chat_completion(tool_calls=[("call_f", "final_answer", arguments)]))
        provider = OpenAIProvider(
            base_url=fake.base_url, api_key="sk-test", structured_output="tool"
        )
        async with agent_worker(client, agent, model=provider, task_queue=task_queue):
            result = await agents.run(agent, "Answer")
        [request] = fake.requests

    assert (result.status, result.data, result.steps) == ("completed", data, 1)
    assert "response_format" not in request.json
    [final] = [t for t in request.json["tools"] if t["function"]["name"] == "final_answer"]
    assert final["function"]["parameters"]["type"] == "object"
