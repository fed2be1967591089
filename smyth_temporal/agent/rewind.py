"""Taking a rewind: what a run does with the ``RewindNotice`` its reset delivered.

Workflow code. A rewind (``AgentClient.rewind``) resets the run to the workflow task
that ended step N and signals the new run a ``RewindNotice``: in the reset request
itself (a post-reset operation) where the server supports it, else right after it.
Either way the run must not start step N+1 without the notice, so:

- a reset is seen where it happens: Temporal gives the workflow a new random seed
  there (``register_random_seed_callback``), in the workflow task that resumes the
  run after step N; a coroutine started with the run wakes up in that same task and
  notes its history length (``Run.resets.reset_at``: the callback itself cannot read
  it, it runs while the activation's jobs are applied);
- the notice's handler notes the length of the task it came in (``notice_at``);
- before the model turn, ``before_turn`` waits while the last reset came in a later
  task than the last notice. A notice signalled with the reset comes in the same task
  (handlers and the reseed of one activation run in either order, depending on the
  run's temporalio version: lengths, not order, decide). A reset that is not a
  rewind's (``temporal workflow reset``) never gets a notice: the run waits at most
  ``NOTICE_WAIT`` and goes on (patch ``smyth-rewind-wait``, so histories reset before
  this code replay unchanged).

Taking a notice: it becomes ``Run.rewind`` (the tool runner reconciles the side effects
it lists), the memories the abandoned steps wrote are removed (a recall waits for
that), and its prompt is kept for ``before_turn``, which adds it as a user message
right before step N+1's prompt is built: after step N's last tool result, even when
that result comes after the notice (a local tool of step N runs again in the reset's
task), and before a session's next message, if that came after the notice.

Added in 0.10.0.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial

from temporalio import workflow

from smyth_temporal.agent.memory import AgentMemory
from smyth_temporal.agent.run import Run
from smyth_temporal.types.events import MessageCompleted
from smyth_temporal.types.messages import Message
from smyth_temporal.types.rewind import RewindNotice

__all__ = ["NOTICE_WAIT", "REWIND_WAIT_PATCH", "before_turn", "take_rewind", "watch_resets"]

REWIND_WAIT_PATCH = "smyth-rewind-wait"
NOTICE_WAIT = timedelta(minutes=1)
"""How long a reset run waits for a rewind's notice before it goes on without one."""


def watch_resets(run: Run) -> None:
    """Note where the run is reset (call it from the workflow's constructor).

    Issues no command: histories without a reset replay unchanged.
    """
    workflow.register_random_seed_callback(partial(_reset_seen, run))
    asyncio.get_running_loop().create_task(_note_resets(run))


def _reset_seen(run: Run, _seed: int) -> None:
    # Called while the activation's jobs are applied (no workflow.info() here: it would
    # raise, and temporalio drops a callback's errors): _note_resets notes where.
    run.resets.reseeded = True


async def _note_resets(run: Run) -> None:
    # For a run that takes no model turn in the reset's task (a session waiting for its
    # next message); before_turn notes it first when it runs in that task.
    while True:
        await workflow.wait_condition(lambda: run.resets.reseeded)
        _note_reset(run)


def _note_reset(run: Run) -> None:
    if run.resets.reseeded:
        run.resets.reseeded = False
        run.resets.reset_at = workflow.info().get_current_history_length()


async def before_turn(run: Run) -> None:
    """Wait for the notice of a rewind whose reset this run has seen; add its prompt."""
    _note_reset(run)
    resets = run.resets
    # Waits only after a reset whose notice has not come (never in a run without one).
    waiting = resets.reset_at > resets.notice_at and workflow.patched(REWIND_WAIT_PATCH)
    if waiting and not await _notice_within(run, NOTICE_WAIT):
        run.log.warning("agent.reset_without_notice", waited=str(NOTICE_WAIT))
        resets.notice_at = resets.reset_at
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
        await workflow.wait_condition(lambda: resets.notice_at >= resets.reset_at, timeout=timeout)
    except TimeoutError:
        return False
    return True


async def take_rewind(run: Run, memory: AgentMemory, notice: RewindNotice) -> None:
    """Go on from ``notice``: store it, add its prompt, forget what was abandoned."""
    run.rewind = notice
    run.resets.notice_at = workflow.info().get_current_history_length()
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
