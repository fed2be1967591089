"""Context budget and compaction: pure policy, then real runs on the dev server."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from smyth_temporal import AgentClient, AgentInput, Message, ToolCall
from smyth_temporal.context import estimate_tokens, pinned_prefix, plan_compaction
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from smyth_temporal.types.model import ModelRequest
from tests.helpers.context_agents import Digest, report_text

DAYS = 12


def call(step: int) -> list[Message]:
    """One turn: an assistant call and its (long) result."""
    tool_call_ = ToolCall(id=f"c{step}", name="daily_report", arguments=f'{{"day": {step}}}')
    return [
        Message(role="assistant", tool_calls=[tool_call_], step=step),
        Message.tool_result(tool_call_, report_text(step), step=step),
    ]


def conversation(turns: int) -> list[Message]:
    messages = [Message.system("You digest."), Message.user("Digest the reports.")]
    for step in range(1, turns + 1):
        messages += call(step)
    return messages


def test_the_estimate_counts_text_calls_and_overhead() -> None:
    empty = estimate_tokens([Message.user("")])
    assert empty == 4
    assert estimate_tokens([Message.user("x" * 3500)]) == 1004
    assert estimate_tokens(call(1)) > estimate_tokens(call(1)[1:])


def test_nothing_is_planned_under_budget() -> None:
    assert (
        plan_compaction(conversation(2), budget=10_000, keep_recent=5_000, count=estimate_tokens)
        is None
    )


def test_the_plan_keeps_the_task_and_recent_turns_and_never_splits_a_call() -> None:
    messages = conversation(10)
    plan = plan_compaction(messages, budget=2_000, keep_recent=1_000, count=estimate_tokens)
    assert plan is not None
    assert plan.start == pinned_prefix(messages) == 2
    assert messages[plan.end].role == "assistant"  # the cut is at a turn, not a result
    kept = messages[plan.end :]
    assert estimate_tokens(kept) <= 1_000 or len(kept) == 2
    assert plan.end - plan.start >= 2


def test_a_turn_bigger_than_the_keep_share_is_kept_whole() -> None:
    messages = conversation(4)
    plan = plan_compaction(messages, budget=500, keep_recent=10, count=estimate_tokens)
    assert plan is not None
    assert messages[plan.end :] == call(4)


def memory_at(path: Path) -> MemoryManager:
    return MemoryManager(EdgeStore(path), HashEmbedder(64))


def digest_script() -> ScriptedModel:
    return ScriptedModel(
        [*(tool_call("daily_report", day=day) for day in range(1, DAYS + 1)), reply("digested")]
    )


def assert_calls_keep_their_results(request: ModelRequest) -> None:
    asked = {c.id for m in request.messages for c in m.tool_calls}
    answered = {m.tool_call_id for m in request.messages if m.role == "tool"}
    assert asked == answered, request.step


async def test_a_long_task_is_compacted_with_lineage_and_the_originals_are_recallable(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    model = digest_script()
    memory = memory_at(tmp_path / "memory")
    async with agent_worker(client, Digest, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Digest, AgentInput(prompt="Digest the reports.", tenant="t1"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
        # k covers every archived chunk: the 64-dimension hash embedder ranks near-identical
        # reports by chance, and which chunks exist depends on when compaction ran.
        hits = await agents.memory.search(
            "marker-002 closing price", tenant="t1", namespace="digest", kinds=["transcript"], k=50
        )
    await memory.close()

    assert result.output == "digested"
    budget = Digest.config.context_budget
    assert budget is not None
    compactions = state.compactions
    assert len(compactions) >= 2
    assert model.summary_requests, "the summarizer was asked"
    # Every prompt fit the budget (the most recent turn alone is under it) and no call
    # was ever separated from its result.
    for request in model.requests:
        assert estimate_tokens(request.messages) <= budget
        assert_calls_keep_their_results(request)
    # Lineage: each summary folds in the previous one and covers the steps up to its own.
    first, *later = compactions
    assert first.first_step == 1 and not first.folded
    for previous, current in zip(compactions[:-1], later, strict=True):
        assert current.folded == [previous.id]
        assert current.first_step == 1
        assert current.last_step is not None and previous.last_step is not None
        assert current.last_step > previous.last_step
        assert current.tokens_after < current.tokens_before
    # The task and the system prompt are pinned; the summary names its compaction.
    final_prompt = model.requests[-1].messages
    assert [m.content for m in final_prompt[:2]] == [
        "You digest market reports.",
        "Digest the reports.",
    ]
    [summary] = [m for m in final_prompt if m.compaction]
    assert summary.compaction == compactions[-1].id
    assert f"steps 1-{compactions[-1].last_step}" in (summary.content or "")
    # The archived originals are in memory as transcripts, findable by their content.
    assert any("marker-002" in h.record.text for h in hits)
    assert all(h.record.kind == "transcript" for h in hits)
    assert all(h.record.provenance.workflow_id == handle.id for h in hits)
    archived = {i for c in compactions for i in c.archived}
    assert {h.record.id for h in hits} <= archived


def failing_summarizer(request: ModelRequest) -> str:
    raise ApplicationError("summarizer down", type="ModelDown", non_retryable=True)


async def test_a_failing_summarizer_loses_nothing(
    client: Client, agents: AgentClient, task_queue: str, tmp_path: Path
) -> None:
    script = digest_script()
    model = ScriptedModel(script.steps, summarizer=failing_summarizer)
    memory = memory_at(tmp_path / "memory")
    async with agent_worker(client, Digest, model=model, task_queue=task_queue, memory=memory):
        handle = await agents.start(Digest, AgentInput(prompt="Digest the reports.", tenant="t1"))
        result = await agents.result(handle.id)
        state = await agents.state(handle.id)
        transcripts = await agents.memory.list_memories(
            tenant="t1", namespace="digest", kinds=["transcript"], limit=500
        )
    await memory.close()

    assert result.output == "digested"
    budget = Digest.config.context_budget
    assert budget is not None
    # The summarizer was retried at later turns, and while it failed the prompt kept
    # every message until the hard limit, where a placeholder took over.
    assert len(model.summary_requests) > 1
    assert state.compactions and all(c.fallback for c in state.compactions)
    assert all(c.error and "summarizer down" in c.error for c in state.compactions)
    limit = budget * Digest.config.context_hard_limit
    for request in model.requests:
        assert_calls_keep_their_results(request)
        assert estimate_tokens(request.messages) <= limit + 1_000
    # Nothing lost: every report is either still in the final prompt or archived.
    final = "\n".join(m.content or "" for m in model.requests[-1].messages)
    archive = "\n".join(t.text for t in transcripts)
    for day in range(1, DAYS + 1):
        assert f"marker-{day:03d}" in final or f"marker-{day:03d}" in archive, day
    assert "recall the transcript" in final
