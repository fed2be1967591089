"""A side-effect call with a reconcile hook never runs twice for one key when the hook says done.

Two halves, both pure and fast:

- the worker side: a tool activity run through any sequence of attempts, each lost
  before acting, lost after acting or completing (``ActivityEnvironment``, attempts
  numbered as Temporal numbers them), against a hook that answers ``done`` once the
  key's effect exists: the effect happens at most once, and what the activity returns
  after it happened is the reused result;
- the workflow side: a rewound run's calls (any tools, arguments, steps and repeats)
  against a notice's abandoned calls: each abandoned call is claimed by at most one
  call, only by a call of its tool and arguments, and a call that repeats an abandoned
  call not yet claimed is claimed (so it is reconciled, never run blindly).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from smyth_temporal.activities import tool_activities
from smyth_temporal.agent.reconcile import Reconciler
from smyth_temporal.tools import Reconciled, Tool, tool
from smyth_temporal.types.approvals import arguments_sha256
from smyth_temporal.types.messages import ToolCall
from smyth_temporal.types.rewind import RewindNotice, RewoundCall
from smyth_temporal.types.tools import ToolInvocation

KEY = "wf/run/1/call_1_0"

Attempt = st.sampled_from(["lost_before", "lost_after", "completes"])
"""What one attempt does: its worker dies before the tool acts, after it acted, or it
completes (a lost attempt is what Temporal retries after a heartbeat timeout)."""


class World:
    """The outside world the tool acts on, and the plan of what each attempt does."""

    def __init__(self, plan: list[str]) -> None:
        self.effects: Counter[str] = Counter()
        self.plan = plan
        self.attempt = 0

    def hook(self, key: str, arguments: Mapping[str, Any]) -> Reconciled:
        return Reconciled.done("paid (found)") if self.effects[key] else Reconciled.not_done()

    async def pay(self, amount: int) -> str:
        what = self.plan[self.attempt - 1]
        if what == "lost_before":
            raise ApplicationError("worker lost", non_retryable=False)
        self.effects[KEY] += 1
        if what == "lost_after":
            raise ApplicationError("worker lost", non_retryable=False)
        return "paid"


@given(st.lists(Attempt, min_size=1, max_size=6))
async def test_a_retried_side_effect_acts_at_most_once_when_reconcile_says_done(
    plan: list[str],
) -> None:
    world = World(plan)
    spec = tool(name="pay", effect="side_effect", reconcile=world.hook)(world.pay)
    run_tool = tool_activities([spec])[0]
    invocation = ToolInvocation(
        tool="pay",
        call_id="call_1_0",
        arguments={"amount": 5},
        idempotency_key=KEY,
        agent="Payer",
        step=1,
        tenant="default",
    )
    outcome = None
    for attempt in range(1, len(plan) + 1):
        world.attempt = attempt
        env = ActivityEnvironment()
        env.info = dataclasses.replace(env.info, attempt=attempt)
        try:
            outcome = await env.run(run_tool, invocation)
            break
        except ApplicationError:
            continue  # Temporal retries the attempt
    assert world.effects[KEY] <= 1
    acted_at = next((i for i, what in enumerate(plan) if what != "lost_before"), None)
    if outcome is not None and acted_at is not None and plan[acted_at] == "lost_after":
        assert outcome.content == "paid (found)"  # reused, not paid again


TOOLS = st.sampled_from(["send", "pay"])
ARGUMENTS = st.fixed_dictionaries({"to": st.sampled_from(["ann", "bob"])})


def _tool(name: str) -> Tool:
    async def act(to: str) -> str:
        return to

    return tool(name=name, effect="side_effect", reconcile=lambda k, a: Reconciled.done())(act)


@given(
    abandoned=st.lists(st.tuples(TOOLS, ARGUMENTS), max_size=5),
    calls=st.lists(st.tuples(st.integers(1, 3), TOOLS, ARGUMENTS), max_size=8),
    looks=st.integers(1, 3),
)
def test_each_abandoned_call_is_reconciled_by_at_most_one_matching_call(
    abandoned: list[tuple[str, dict[str, Any]]],
    calls: list[tuple[int, str, dict[str, Any]]],
    looks: int,
) -> None:
    notice = RewindNotice(
        to_step=0,
        abandoned_run_id="r",
        side_effects=tuple(
            RewoundCall(
                step=1,
                call_id=f"old_{i}",
                tool=name,
                arguments_sha256=arguments_sha256(args),
                idempotency_key=f"old/{i}",
                outcome="completed",
            )
            for i, (name, args) in enumerate(abandoned)
        ),
    )
    conversation = SimpleNamespace(step=1)
    run: Any = SimpleNamespace(rewind=notice, conversation=conversation)
    reconciler = Reconciler(run, patched=lambda _: True)
    tools = {name: _tool(name) for name in ("send", "pay")}
    claimed: dict[str, RewoundCall] = {}
    for index, (step, name, args) in enumerate(sorted(calls, key=lambda c: c[0])):
        conversation.step = step
        call = ToolCall(id=f"call_{step}_{index}", name=name, arguments="{}")
        unclaimed = [
            r
            for r in notice.side_effects
            if r not in claimed.values()
            and (r.tool, r.arguments_sha256) == (name, arguments_sha256(args))
        ]
        found = [reconciler.claim(tools[name], call, args) for _ in range(looks)]
        assert len(set(map(id, found))) == 1  # asking again names the same call
        if unclaimed:
            assert found[0] is unclaimed[0]  # the first one not yet claimed
            claimed[call.id] = unclaimed[0]
        else:
            assert found[0] is None
    assert len({id(r) for r in claimed.values()}) == len(claimed)  # never claimed twice


def _reconciler(
    *abandoned: tuple[str, dict[str, Any]],
) -> tuple[Reconciler, Any, dict[str, Tool]]:
    notice = RewindNotice(
        to_step=0,
        abandoned_run_id="r",
        side_effects=tuple(
            RewoundCall(
                step=1,
                call_id=f"old_{i}",
                tool=name,
                arguments_sha256=arguments_sha256(args),
                idempotency_key=f"old/{i}",
                outcome="completed",
            )
            for i, (name, args) in enumerate(abandoned)
        ),
    )
    run: Any = SimpleNamespace(rewind=notice, conversation=SimpleNamespace(step=1))
    return Reconciler(run, patched=lambda _: True), run, {n: _tool(n) for n in ("send", "pay")}


def test_a_call_an_interrupt_stopped_gives_its_abandoned_call_back() -> None:
    # The turn that repeated the send was interrupted before it ran: the next turn's
    # send must still be reconciled, not run blindly a second time.
    reconciler, run, tools = _reconciler(("send", {"to": "ann"}))
    first = ToolCall(id="call_1_0", name="send", arguments='{"to": "ann"}')
    assert reconciler.waiting(tools["send"], first)
    reconciler.release(first)
    run.conversation.step = 2
    again = ToolCall(id="call_2_0", name="send", arguments='{"to": "ann"}')
    assert reconciler.claim(tools["send"], again, {"to": "ann"}) is not None


def test_a_second_rewind_matches_against_its_own_notice() -> None:
    # Claims index into the notice they were made against; a new notice (a rewind of
    # the rewound run) lists other calls, and an old claim must not use one of them up.
    reconciler, run, tools = _reconciler(("send", {"to": "ann"}), ("pay", {"to": "bob"}))
    call = ToolCall(id="call_1_0", name="send", arguments="{}")
    assert reconciler.claim(tools["send"], call, {"to": "ann"}) is not None
    again = RewoundCall(
        step=2,
        call_id="call_2_0",
        tool="send",
        arguments_sha256=arguments_sha256({"to": "ann"}),
        idempotency_key="newer/0",
        outcome="completed",
    )
    run.rewind = run.rewind.model_copy(update={"side_effects": (again,)})
    run.conversation.step = 2
    later = ToolCall(id="call_2_0", name="send", arguments="{}")
    found = reconciler.claim(tools["send"], later, {"to": "ann"})
    assert found is not None and found.idempotency_key == "newer/0"
