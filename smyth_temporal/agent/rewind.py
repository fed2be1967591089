"""Taking a rewind: what a run does with the ``RewindNotice`` its reset delivered.

Workflow code. A rewind (``AgentClient.rewind``) resets the run to the workflow task
that ended step N and signals the new run a ``RewindNotice``: in the reset request
itself (a post-reset operation) where the server supports it, else right after it.
Either way the run must not start step N+1 without the notice, so it counts both:

- a reset is seen where Temporal gives the workflow a new random seed
  (``register_random_seed_callback``); each reset reseeds the run once, and replaying
  the run from its history sees every earlier reset again;
- the notice's handler counts the notices;
- before a model turn, ``before_turn`` waits while fewer notices than resets came.

Counts, not positions: the reseed and the notice may come in either order and in
different workflow tasks (the reseed of a reset run has been seen one task after the
notice signalled right after the reset), so comparing where each came made a session
rewound between messages wait out ``NOTICE_WAIT`` for a notice it already had. A reset
that is not a rewind's (``temporal workflow reset``) never gets a notice: the run waits
at most ``NOTICE_WAIT`` and goes on, counting it as explained (patch
``smyth-rewind-wait``, so histories reset before this code replay unchanged).

Taking a notice: it becomes ``Run.rewind`` (the tool runner reconciles the side effects
it lists), the memories the abandoned steps wrote are removed (a recall waits for
that), and its prompt is kept for ``before_turn``, which adds it as a user message
right before step N+1's prompt is built: after step N's last tool result, even when
that result comes after the notice (a local tool of step N runs again in the reset's
task), and before a session's next message, if that came after the notice.

Added in 0.10.0.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from temporalio import workflow

from smyth_temporal.agent.memory import AgentMemory
from smyth_temporal.agent.run import Run
from smyth_temporal.types.events import MessageCompleted
from smyth_temporal.types.messages import Message
from smyth_temporal.types.rewind import RewindNotice

__all__ = [
    "NOTICE_WAIT",
    "REWIND_CARRY_PATCH",
    "REWIND_WAIT_PATCH",
    "before_turn",
    "carry_unreconciled",
    "take_rewind",
    "watch_resets",
]

REWIND_WAIT_PATCH = "smyth-rewind-wait"
REWIND_CARRY_PATCH = "smyth-rewind-carry"
NOTICE_WAIT = timedelta(minutes=1)
"""How long a reset run waits for a rewind's notice before it goes on without one."""


def watch_resets(run: Run) -> None:
    """Count the run's resets (call it from the workflow's constructor).

    Issues no command: histories without a reset replay unchanged.
    """
    workflow.register_random_seed_callback(partial(_reset_seen, run))


def _reset_seen(run: Run, _seed: int) -> None:
    # Called while the activation's jobs are applied: only counting here (workflow.info()
    # would raise, and temporalio drops a callback's errors).
    run.resets.seen += 1


async def before_turn(run: Run) -> None:
    """Wait for the notice of a rewind whose reset this run has seen; add its prompt."""
    resets = run.resets
    # Waits only after a reset whose notice has not come (never in a run without one).
    waiting = resets.seen > resets.noticed and workflow.patched(REWIND_WAIT_PATCH)
    if waiting and not await _notice_within(run, NOTICE_WAIT):
        run.log.warning("agent.reset_without_notice", waited=str(NOTICE_WAIT))
        resets.noticed = resets.seen
    if resets.prompt is not None:
        _add_prompt(run, resets.prompt)
        resets.prompt = None


def _add_prompt(run: Run, prompt: str) -> None:
    """Add a notice's prompt after step N, before the user messages that came after it.

    After step N's tool results (a local tool of step N may run again after the notice
    came), but before a session's next message, which it is meant to come before.
    """
    messages = run.conversation.messages
    at = len(messages)
    while at > run.resets.prompt_after and messages[at - 1].role == "user":
        at -= 1
    message = Message.user(prompt)
    messages.insert(at, message)
    run.conversation.publish(MessageCompleted(message=message))


async def _notice_within(run: Run, timeout: timedelta) -> bool:
    resets = run.resets
    try:
        await workflow.wait_condition(lambda: resets.noticed >= resets.seen, timeout=timeout)
    except TimeoutError:
        return False
    return True


def carry_unreconciled(previous: RewindNotice | None, notice: RewindNotice) -> RewindNotice:
    """``notice`` followed by the side effects ``previous`` still had to reconcile.

    A second rewind abandons a run that was itself rewound: the side effects of the
    first abandoned run that the run had not repeated yet are in no history the second
    rewind reads, yet they happened. Replaying to the second rewind's step rebuilds
    ``run.rewind`` as it was there (calls reconciled after that step are back in it), so
    what it lists is exactly what is still owed. The new notice's own calls come first:
    they are the latest effects, so a repeated call is matched against what most
    recently happened (a send the first rewound run made again is found as done, not
    the first abandoned one it had found ``not_done``).
    """
    if previous is None:
        return notice
    listed = {call.idempotency_key for call in notice.side_effects}
    left = tuple(c for c in previous.side_effects if c.idempotency_key not in listed)
    if not left:
        return notice
    return notice.model_copy(update={"side_effects": (*notice.side_effects, *left)})


async def take_rewind(run: Run, memory: AgentMemory, notice: RewindNotice) -> None:
    """Go on from ``notice``: store it, add its prompt, forget what was abandoned.

    What an earlier notice still had to reconcile is kept (``carry_unreconciled``;
    patch ``smyth-rewind-carry``, asked only when there is something to carry).
    """
    carried = carry_unreconciled(run.rewind, notice)
    if carried is not notice and workflow.patched(REWIND_CARRY_PATCH):
        notice = carried
    run.rewind = notice
    run.resets.noticed += 1
    run.resets.prompt = notice.prompt or None
    run.resets.prompt_after = len(run.conversation.messages)
    run.log.info(
        "agent.rewound",
        to_step=notice.to_step,
        abandoned_run_id=notice.abandoned_run_id,
        side_effects=len(notice.side_effects),
        voided_approvals=len(notice.voided_approvals),
        by=notice.by,
    )
    removed = await memory.undo_rewound(notice)
    if notice.memory_runs:
        run.log.info("agent.rewind_memory_removed", to_step=notice.to_step, memories=removed)
