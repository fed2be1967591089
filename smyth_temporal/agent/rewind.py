"""Taking a rewind: what a run does with the ``RewindNotice`` its reset delivered.

Workflow code. A rewind (``AgentClient.rewind``) resets the run to the workflow task
that ended step N and signals the new run a ``RewindNotice``: in the reset request
itself (a post-reset operation) where the server supports it, else right after it.
Either way the run must not start step N+1 without the notice, so:

- a reset is seen where it happens: Temporal gives the workflow a new random seed
  there (``register_random_seed_callback``), in the activation that resumes the run
  after step N; ``Run.resets`` counts it (``seen``);
- it counts the notices taken too; before each model turn, ``before_turn`` waits while
  a reset has no notice yet (a notice signalled with the reset is applied before any
  result of its activation, so then nothing waits). A reset that is not a rewind's
  (``temporal workflow reset``) never gets one: the run waits at most ``NOTICE_WAIT``
  and goes on (patch ``smyth-rewind-wait``, so histories reset before this code
  replay unchanged).

Taking a notice: it becomes ``Run.rewind`` (the tool runner reconciles the side effects
it lists), the memories the abandoned steps wrote are removed (a recall waits for
that), and its prompt is kept for ``before_turn``, which adds it as a user message
right before step N+1's prompt is built: after step N's last tool result, even when
that result comes in the same activation (a local tool of step N runs again there).

Added in 0.10.0.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from temporalio import workflow

from smyth_temporal.agent.memory import AgentMemory
from smyth_temporal.agent.run import Run
from smyth_temporal.types.messages import Message
from smyth_temporal.types.rewind import RewindNotice

__all__ = ["NOTICE_WAIT", "REWIND_WAIT_PATCH", "before_turn", "take_rewind", "watch_resets"]

REWIND_WAIT_PATCH = "smyth-rewind-wait"
NOTICE_WAIT = timedelta(minutes=1)
"""How long a reset run waits for a rewind's notice before it goes on without one."""


def watch_resets(run: Run) -> None:
    """Count the resets of the run (call it from the workflow's constructor)."""
    workflow.register_random_seed_callback(partial(_reset_seen, run))


def _reset_seen(run: Run, _seed: int) -> None:
    run.resets.seen += 1


async def before_turn(run: Run) -> None:
    """Wait for the notice of a rewind whose reset this run has seen; add its prompt."""
    resets = run.resets
    # Waits only after a reset whose notice has not come (never in a run without one).
    waiting = resets.seen > resets.notices and workflow.patched(REWIND_WAIT_PATCH)
    if waiting and not await _notice_within(run, NOTICE_WAIT):
        run.log.warning("agent.reset_without_notice", resets=resets.seen, waited=str(NOTICE_WAIT))
        resets.notices = resets.seen
    if resets.prompt is not None:
        run.conversation.add(Message.user(resets.prompt))
        resets.prompt = None


async def _notice_within(run: Run, timeout: timedelta) -> bool:
    resets = run.resets
    try:
        await workflow.wait_condition(lambda: resets.notices >= resets.seen, timeout=timeout)
    except TimeoutError:
        return False
    return True


async def take_rewind(run: Run, memory: AgentMemory, notice: RewindNotice) -> None:
    """Go on from ``notice``: store it, add its prompt, forget what was abandoned."""
    run.rewind = notice
    run.resets.notices += 1
    run.resets.prompt = notice.prompt or None
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
