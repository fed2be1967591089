"""``AgentClient.fork``: a new run from a step of a run, no model call for the steps before."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client

from smyth_temporal import (
    AccessDeniedError,
    AgentClient,
    AgentInput,
    AgentNotFoundError,
    AgentResult,
    AgentWorkflow,
)
from smyth_temporal.clients._fork import fork_point
from smyth_temporal.exceptions import ForkError
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.security import Principal
from smyth_temporal.storage import ContentAddressedFileDriver
from smyth_temporal.testing import ReplayModel, ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.model import ModelRequest, ModelResponse
from smyth_temporal.types.sessions import session_workflow_id
from smyth_temporal.types.visibility import FORK_MEMO, FORK_OF_ATTRIBUTE
from tests.agent.test_approvals import wait_for_pending
from tests.helpers.agents import PRICES, Analyst
from tests.helpers.cli_support import assert_one_error_line, run_smyth
from tests.helpers.context_agents import Digest, Relay, report_text
from tests.helpers.trader import Trader

NEW_PROMPT = "Forget ACME, look at GLOBEX instead."


def forked(request: ModelRequest) -> bool:
    """Whether a request was made by the fork (its conversation has the new prompt)."""
    return any(m.content == NEW_PROMPT for m in request.messages)


def turn(request: ModelRequest) -> ModelResponse:
    """Four quotes then an answer; the fork's turns answer about GLOBEX."""
    if request.step < 5:
        symbol = "GLOBEX" if forked(request) else "ACME"
        return tool_call("get_quote", symbol=symbol)
    return reply("GLOBEX is flat." if forked(request) else "ACME is up.")


async def test_a_fork_at_step_2_calls_no_model_for_steps_1_and_2(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([turn] * 5)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        parent_handle = await agents.start(Analyst, "How is ACME doing?")
        original = await agents.result(parent_handle.id)
        assert (original.output, original.steps) == ("ACME is up.", 5)
        handle = await agents.fork(parent_handle.id, at_step=2, prompt=NEW_PROMPT)
        fork = await agents.result(handle.id)
        parent = await agents.result(parent_handle.id)
        state = await agents.state(handle.id)

    fork_requests = [r for r in model.requests if forked(r)]
    assert [r.step for r in fork_requests] == [3, 4, 5]  # none for steps 1-2
    assert len(model.requests) == 5 + 3
    first = fork_requests[0]
    # The fork's first turn sees the original's two steps (calls and results), then the prompt.
    assert [m.role for m in first.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
    ]
    assert (fork.output, fork.steps) == ("GLOBEX is flat.", 5)
    assert fork.usage.requests == 5  # the original's two, its own three
    assert parent.output == original.output and parent.steps == 5  # the original is untouched

    assert state.step == 5
    assert state.fork_of is not None and state.fork_of.workflow_id == parent_handle.id
    assert state.fork_of.step == 2
    description = await client.get_workflow_handle(handle.id).describe()
    origin = (await description.memo())[FORK_MEMO]
    assert origin["step"] == 2 and origin["run_id"]
    assert description.typed_search_attributes.get(FORK_OF_ATTRIBUTE) == origin["workflow_id"]


async def test_a_fork_reads_a_step_taken_in_an_earlier_run_of_a_chain(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Relay continues as new after every two steps: step 3 was taken in its second run.
    days = [tool_call("daily_report", day=day) for day in range(1, 6)]
    model = ScriptedModel([*days, reply("done"), reply("forked")])
    async with agent_worker(client, Relay, model=model, task_queue=task_queue):
        handle = await agents.start(Relay, "Read five days.")
        original = await agents.result(handle.id)
        runs = [e.run_id async for e in client.list_workflows(f"WorkflowId = '{handle.id}'")]
        assert len(runs) >= 3
        fork = await agents.fork(handle.id, at_step=3, prompt="Stop here.")
        await agents.result(fork.id)

    fork_requests = [
        r for r in model.requests if any(m.content == "Stop here." for m in r.messages)
    ]
    assert [r.step for r in fork_requests] == [4, 5, 6]  # none for steps 1-3
    seen = [m.content for m in fork_requests[0].messages if m.role == "tool"]
    assert len(seen) == 3  # the reports of days 1-3, from two runs of the chain
    assert original.steps == 6


async def test_forking_beyond_the_run_or_an_unknown_run_starts_nothing(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "How is ACME doing?")
        await agents.result(handle.id)
        with pytest.raises(ForkError, match="has taken 2 steps; it cannot be forked at step 3"):
            await agents.fork(handle.id, at_step=3, id="fork-beyond")
        with pytest.raises(AgentNotFoundError):
            await agents.fork("no-such-run", at_step=1, id="fork-unknown")
    for fork_id in ("fork-beyond", "fork-unknown"):
        with pytest.raises(Exception, match="not found"):
            await client.get_workflow_handle(fork_id).describe()
    assert len(model.requests) == 2


async def test_smyth_fork_goes_on_with_another_model_and_refuses_a_step_beyond_the_run(
    client: Client, agents: AgentClient, task_queue: str, address: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    env = {"TEMPORAL_ADDRESS": address, "SMYTH_TASK_QUEUE": task_queue}
    agent = "--agent=tests.helpers.agents:Analyst"
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "How is ACME doing?")
        await agents.result(handle.id)
        args = ["fork", handle.id, "--at-step", "1", agent, "--model", "other-model"]
        outcome = await asyncio.to_thread(run_smyth, *args, "--id", "cli-fork", env=env)
        assert outcome.code == 0, outcome.err
        assert outcome.out.strip() == "cli-fork"
        fork = await agents.result("cli-fork")
        beyond = ["fork", handle.id, "--at-step", "3", agent, "--id", "cli-fork-beyond"]
        refused = await asyncio.to_thread(run_smyth, *beyond, env=env)
        classless = ["fork", handle.id, "--at-step", "1", "--id", "cli-fork-classless"]
        unknown = await asyncio.to_thread(run_smyth, *classless, env=env)

    assert fork.output == "ACME is up." and fork.steps == 2
    assert [(r.step, r.model) for r in model.requests] == [
        (1, "test-model"),
        (2, "test-model"),
        (2, "other-model"),  # the fork's only turn
    ]
    assert_one_error_line(refused, "has taken 2 steps; it cannot be forked at step 3")
    assert_one_error_line(unknown, "agent 'Analyst' is not imported here")
    for refused_id in ("cli-fork-beyond", "cli-fork-classless"):
        with pytest.raises(Exception, match="not found"):
            await client.get_workflow_handle(refused_id).describe()


async def test_a_run_waiting_for_an_approval_forks_before_the_step_not_in_it(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Trader has no get_quote: step 1 ends with the tool's error, a finished step all the same.
    sell = tool_call("sell", symbol="ACME", quantity=10)
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), sell, reply("sold")])
    async with agent_worker(client, Trader, model=model, task_queue=task_queue):
        handle = await agents.start(Trader, "Sell ACME if it is up.")
        await wait_for_pending(agents, handle.id, 1)
        with pytest.raises(ForkError, match=r"step 2 .* has not finished"):
            await agents.fork(handle.id, at_step=2, id="fork-mid-step")
        fork = await agents.fork(handle.id, at_step=1)
        forked_state = await wait_for_pending(agents, fork.id, 1)
        original = await wait_for_pending(agents, handle.id, 1)
        for workflow_id in (handle.id, fork.id):
            await client.get_workflow_handle(workflow_id).terminate()

    # The fork asked for its own approval of the sale; the original's is still the one.
    assert forked_state.pending_approvals[0].call_id == original.pending_approvals[0].call_id
    assert forked_state.step == original.step == 2
    # The fork's one turn (step 2) asked what the original had asked: replayed, not paid.
    assert [r.step for r in model.requests] == [1, 2]
    with pytest.raises(Exception, match="not found"):
        await client.get_workflow_handle("fork-mid-step").describe()


async def test_a_fork_reads_stored_payloads_and_stores_none_while_replaying(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    note = "a long note " * 500  # over the store's 2 KiB threshold: history holds a reference
    model = ScriptedModel([tool_call("write_note", text=note), reply("noted")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "Write the note down.")
        await agents.result(handle.id)
    stores: list[object] = []
    original_store = ContentAddressedFileDriver.store

    async def counted(self: ContentAddressedFileDriver, *args: Any, **kwargs: Any) -> Any:
        stores.append(args)
        return await original_store(self, *args, **kwargs)

    monkeypatch.setattr(ContentAddressedFileDriver, "store", counted)
    point = await fork_point(client, handle.id, 1)

    assert stores == []  # a replay's commands never reach the server: nothing to store
    call = point.checkpoint.messages[2].tool_calls[0]
    assert json.loads(call.arguments)["text"] == note  # read back from the store


async def test_a_replay_model_pays_only_for_the_turns_after_a_changed_tool_output(
    client: Client,
    agents: AgentClient,
    task_queue: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    symbols = ["GLOBEX", "ACME", "INITECH", "GLOBEX"]
    script = [*[tool_call("get_quote", symbol=s) for s in symbols], reply("done")]
    recording = ScriptedModel(script)
    async with agent_worker(client, Analyst, model=recording, task_queue=task_queue):
        first = await agents.start(Analyst, "Quote four symbols.")
        await agents.result(first.id)
    fresh = ScriptedModel(script)
    model = await ReplayModel.from_history(client, first.id, fresh)
    monkeypatch.setitem(PRICES, "ACME", 99.0)  # step 2's tool output changes
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        again = await agents.run(Analyst, "Quote four symbols.")

    assert again.steps == 5
    # Steps 1-2 asked what the record holds; step 3 sees the new ACME price: from there on
    # every turn is the model's.
    assert (model.replayed, model.called, model.diverged_at) == (2, 3, 3)
    assert [r.step for r in fresh.requests] == [3, 4, 5]


async def test_a_viewer_or_another_tenant_cannot_fork_a_run_and_nothing_starts(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")] * 2)
    viewer = agents.acting_for(Principal(name="acme-viewer", tenant="acme", role="viewer"))
    globex = agents.acting_for(Principal(name="globex-ops", tenant="globex", role="operator"))
    acme = agents.acting_for(Principal(name="acme-ops", tenant="acme", role="operator"))
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, AgentInput(prompt="ACME?", tenant="acme"))
        await agents.result(handle.id)
        with pytest.raises(AccessDeniedError, match="role viewer"):
            await viewer.fork(handle.id, at_step=1, id="fork-by-viewer")
        with pytest.raises(AgentNotFoundError):
            await globex.fork(handle.id, at_step=1, id="fork-by-globex")
        fork = await acme.fork(handle.id, at_step=1, id="fork-by-acme-ops")
        await agents.result(fork.id)
        started = await client.get_workflow_handle(fork.id).fetch_history()

    for refused in ("fork-by-viewer", "fork-by-globex"):
        with pytest.raises(Exception, match="not found"):
            await client.get_workflow_handle(refused).describe()
    (input,) = await client.data_converter.decode(
        list(started.events[0].workflow_execution_started_event_attributes.input.payloads),
        [AgentInput],
    )
    # The fork belongs to the caller's tenant and names the caller's key as its starter.
    assert (input.tenant, input.started_by) == ("acme", "acme-ops")


async def test_a_session_idle_after_its_last_step_forks_into_a_session_that_goes_on(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([reply("Hello."), reply("Hello again.")])
    forked_id = session_workflow_id("Analyst", "default", "forked")
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        first = await agents.send(Analyst, "original", "Hi")
        assert first is not None and first.text == "Hello."
        original_id = session_workflow_id("Analyst", "default", "original")
        # The session waits for its next message: step 1 is its last, read once replayed.
        fork = await agents.fork(original_id, at_step=1, session_id="forked")
        assert fork.id == forked_id  # send() reaches it by its session id
        again = await agents.send(Analyst, "forked", "Hi again")
        state = await agents.state(forked_id)

    assert again is not None and again.text == "Hello again."
    assert [r.step for r in model.requests] == [1, 2]  # the fork's one turn: step 2
    assert [m.content for m in model.requests[1].messages if m.role == "user"] == [
        "Hi",
        "Hi again",
    ]
    assert state.step == 2 and state.fork_of is not None and state.session_id == "forked"


@workflow.defn(name="Analyst")
class ShortenedAnalyst(AgentWorkflow):
    """Analyst's type with code that stops after one step: its runs do not replay."""

    config = dataclasses.replace(Analyst.config, max_steps=1)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


async def test_a_fork_with_code_that_does_not_replay_the_run_says_so_and_starts_nothing(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    model = ScriptedModel([tool_call("get_quote", symbol="ACME"), reply("ACME is up.")])
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "How is ACME doing?")
        await agents.result(handle.id)
    with pytest.raises(ForkError, match="does not replay with this code of Analyst"):
        await agents.fork(handle.id, at_step=2, agent=ShortenedAnalyst, id="fork-changed")
    with pytest.raises(Exception, match="not found"):
        await client.get_workflow_handle("fork-changed").describe()


class HeldModel:
    """``ScriptedModel`` whose turn ``held`` waits until the test lets it go."""

    def __init__(self, model: ScriptedModel, held: int) -> None:
        self.model, self.held = model, held
        self.reached, self.release = asyncio.Event(), asyncio.Event()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step == self.held:
            self.reached.set()
            await self.release.wait()
        return await self.model.complete(request)


async def test_a_running_session_answering_a_message_its_caller_waits_for_does_not_fork(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # Message 2 takes two steps (a quote, then the answer); its answer is held.
    script = [reply("Hello."), tool_call("get_quote", symbol="ACME"), reply("ACME is up.")]
    model = HeldModel(ScriptedModel(script), held=3)
    session_id = session_workflow_id("Analyst", "default", "held")
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        await agents.send(Analyst, "held", "Hi")
        waiting = asyncio.create_task(agents.send(Analyst, "held", "How is ACME?"))
        await model.reached.wait()  # message 2's update is in flight, its step 3 too
        # Right after step 2 the session is half-way through message 2, whose caller
        # still waits for the original's answer.
        with pytest.raises(ForkError, match=r"holds update 'send_message' .* still waits"):
            await agents.fork(session_id, at_step=2, id="fork-of-a-pending-update")
        # Right after step 1, message 2 had not arrived: the fork holds only message 1.
        before = await agents.fork(session_id, at_step=1, session_id="before-message-2")
        state = await agents.state(before.id)
        model.release.set()
        answer = await waiting

    assert answer is not None and answer.text == "ACME is up."  # the original goes on
    assert [m.content for m in state.messages if m.role == "user"] == ["Hi"]
    assert [r.step for r in model.model.requests] == [1, 2, 3]
    with pytest.raises(Exception, match="not found"):
        await client.get_workflow_handle("fork-of-a-pending-update").describe()


async def test_a_session_forked_between_two_messages_holds_only_the_first(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    model = ScriptedModel([reply("Hello."), reply("Hello again.")])
    session_id = session_workflow_id("Analyst", "default", "two")
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        await agents.send(Analyst, "two", "Hi")
        await agents.send(Analyst, "two", "Hi again")
    point = await fork_point(client, session_id, 1)

    # Right after step 1: message 1 and its answer; message 2 came after, to the original.
    messages = point.checkpoint.messages
    assert [m.content for m in messages if m.role == "user"] == ["Hi"]
    assert messages[-1].content == "Hello."


async def test_a_message_that_arrived_while_the_step_ran_is_not_in_the_forked_state(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # Message 2 arrives while step 1 (message 1's answer) is still at the model: it is
    # queued, and joins the conversation only after step 1. It is the original's.
    model = HeldModel(ScriptedModel([reply("Hello."), reply("Hello again.")]), held=1)
    session_id = session_workflow_id("Analyst", "default", "early")
    handle = client.get_workflow_handle(session_id)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        first = asyncio.create_task(agents.send(Analyst, "early", "Hi"))
        await model.reached.wait()
        second = asyncio.create_task(agents.send(Analyst, "early", "Hi again"))
        while (
            sum(
                e.HasField("workflow_execution_update_accepted_event_attributes")
                for e in (await handle.fetch_history()).events
            )
            < 2
        ):
            await asyncio.sleep(0.05)
        model.release.set()
        answers = [await first, await second]
    point = await fork_point(client, session_id, 1)

    assert [a.text for a in answers if a is not None] == ["Hello.", "Hello again."]
    messages = point.checkpoint.messages
    assert [m.content for m in messages if m.role == "user"] == ["Hi"]
    assert messages[-1].content == "Hello."


async def test_a_compaction_right_before_the_next_turn_is_not_in_the_forked_state(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    # Digest's budget compacts before a later turn, with no input in between: the state
    # right after the step before it is the uncompacted one (the fork compacts itself).
    steps = [*(tool_call("daily_report", day=day) for day in range(1, 5)), reply("digested")]
    model = ScriptedModel(steps)
    memory = MemoryManager(EdgeStore(tmp_path / "memory"), HashEmbedder(64))
    async with agent_worker(client, Digest, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Digest, "Digest the reports.")
        await agents.result(handle.id)
    await memory.close()
    step = model.summary_requests[0].step  # the step the first compaction came after
    point = await fork_point(client, handle.id, step)

    checkpoint = point.checkpoint
    assert (checkpoint.compactions, checkpoint.compaction_count) == ([], 0)
    assert [m.role for m in checkpoint.messages[-2:]] == ["assistant", "tool"]
    assert checkpoint.messages[-1].content == report_text(step)


async def test_a_rewound_runs_fork_at_the_rewind_step_holds_no_rewind_prompt(
    client: Client, agents: AgentClient, task_queue: str, ledger: Path
) -> None:
    # The rewind's prompt came after step 1, like any input: it is the rewound run's.
    script = [tool_call("get_quote", symbol="ACME"), reply("ACME is up."), reply("GLOBEX is flat.")]
    model = ScriptedModel(script)
    async with agent_worker(client, Analyst, model=model, task_queue=task_queue):
        handle = await agents.start(Analyst, "How is ACME doing?")
        await agents.result(handle.id)
        await agents.rewind(handle.id, to_step=1, prompt=NEW_PROMPT)
        rewound = await agents.result(handle.id)
    point = await fork_point(client, handle.id, 1)

    assert rewound.status == "completed"
    messages = point.checkpoint.messages
    assert NEW_PROMPT not in [m.content for m in messages]
    assert messages[-1].role == "tool" and point.checkpoint.rewind is None
