"""Reconciling side effects a rewind could not undo, before the rewound run repeats them.

Workflow code. A rewound run (``Run.rewind``) knows the side-effect calls its rewind
abandoned after they completed or may have acted (``RewindNotice.side_effects``). When
the run asks for the same call again (same tool, same ``arguments_sha256``) and the
tool has a ``reconcile`` hook, the hook is asked under the *abandoned* call's
idempotency key before anything runs (see ``ToolRunner.call``). Each abandoned call is
matched at most once, in the order the notice lists them: a run that sends the same
e-mail twice after a rewind past one sending reconciles the first and runs the second.

A call is claimed when first seen (``ToolRunner.act`` asks every gated call's approval
up front; a claimed one asks only after its reconcile answer, which may make it
unnecessary or give it another reason). Everything here is behind ``RECONCILE_PATCH``,
asked only when a call matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal.agent._commands import call_reconcile
from smyth_temporal.agent.run import Run
from smyth_temporal.exceptions import ToolCallError
from smyth_temporal.tools import RECONCILE_PATCH, Reconciled, Tool
from smyth_temporal.types.approvals import arguments_sha256
from smyth_temporal.types.messages import ToolCall
from smyth_temporal.types.rewind import RewindNotice, RewoundCall
from smyth_temporal.types.tools import ToolInvocation

__all__ = ["OutcomeUnknown", "Reconciler", "unknown_reason"]


class OutcomeUnknown(ToolCallError):
    """A tool activity's retry asked reconcile, and it could not tell the outcome.

    Added in 0.10.0.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
        """What the reconcile hook said it could not tell."""


def unknown_reason(tool: str, key: str, why: str | None) -> str:
    """The approval request's reason for a call whose earlier outcome is unknown."""
    return (
        f"The outcome of an earlier '{tool}' call with these arguments is unknown "
        f"(idempotency key {key}): {why or 'its reconcile hook could not tell'}. "
        "Approve to run it, reject to skip it."
    )


class Reconciler:
    """Matches a rewound run's calls to the side effects its rewind left behind.

    Args:
        run: The agent's run (``run.rewind``: the notice, if the run was rewound).
        patched: ``workflow.patched`` (a stand-in in unit tests).

    Added in 0.10.0.
    """

    def __init__(self, run: Run, *, patched: Callable[[str], bool] = workflow.patched) -> None:
        self._run = run
        self._patched = patched
        self._notice: RewindNotice | None = None  # the notice the claims index into
        self._claims: dict[tuple[int, str], int] = {}  # (step, call id) -> notice index
        self._answered: set[tuple[int, str]] = set()

    def claim(self, spec: Tool, call: ToolCall, arguments: Mapping[str, Any]) -> RewoundCall | None:
        """The abandoned call ``call`` repeats, not yet reconciled; ``None`` if none.

        Idempotent per call: the first look claims the first unclaimed match.
        """
        notice = self._run.rewind
        if notice is None or spec.reconcile is None:
            return None
        if notice is not self._notice:
            # Rewound again: the new notice lists what its own reset left behind.
            self._notice, self._claims, self._answered = notice, {}, set()
        key = (self._run.conversation.step, call.id)
        if key in self._answered:
            return None
        if key in self._claims:
            return notice.side_effects[self._claims[key]]
        digest = arguments_sha256(dict(arguments))
        taken = set(self._claims.values())
        for index, rewound in enumerate(notice.side_effects):
            if index in taken or rewound.tool != spec.name:
                continue
            if rewound.arguments_sha256 == digest and self._patched(RECONCILE_PATCH):
                self._claims[key] = index
                return rewound
        return None

    def _settle(self, key: tuple[int, str]) -> None:
        """``key``'s call was reconciled: its abandoned call leaves the notice.

        ``run.rewind`` then lists only what is left to reconcile, which is what
        continue-as-new carries (``AgentCheckpoint.rewind``).
        """
        self._answered.add(key)
        index = self._claims.pop(key, None)
        notice = self._run.rewind
        if index is None or notice is None:
            return
        left = notice.side_effects[:index] + notice.side_effects[index + 1 :]
        self._run.rewind = self._notice = notice.model_copy(update={"side_effects": left})
        self._claims = {k: i - (i > index) for k, i in self._claims.items()}

    def release(self, call: ToolCall) -> None:
        """Give back ``call``'s claim if it was never asked about (the turn was interrupted).

        The abandoned call is then matched by the next call that repeats it, instead of
        being used up by a call that never ran.
        """
        key = (self._run.conversation.step, call.id)
        if key not in self._answered:
            self._claims.pop(key, None)

    def waiting(self, spec: Tool | None, call: ToolCall) -> bool:
        """Whether ``call`` waits for its reconcile answer before it may ask approval."""
        if spec is None or spec.reconcile is None or self._run.rewind is None:
            return False
        try:
            arguments = spec.validate_arguments(call.arguments)
        except Exception:
            return False  # the call is refused anyway, before it asks anything
        return self.claim(spec, call, arguments) is not None

    async def ask(self, spec: Tool, invocation: ToolInvocation, rewound: RewoundCall) -> Reconciled:
        """Ask the tool's hook about ``rewound`` (its key), for the call ``invocation``.

        A hook that still fails after its retries (or answers something else than a
        ``Reconciled``) tells nothing: the answer is ``unknown``, so a person decides
        rather than the run failing or the call running blindly.
        """
        abandoned = invocation.model_copy(update={"idempotency_key": rewound.idempotency_key})
        try:
            answer = await call_reconcile(spec, abandoned)
        except ActivityError as exc:
            answer = Reconciled.unknown(f"its reconcile hook failed: {exc.cause or exc}")
        self._settle((invocation.step, invocation.call_id))
        self._run.log.info(
            "agent.tool_reconciled",
            step=invocation.step,
            tool=spec.name,
            call_id=invocation.call_id,
            abandoned_step=rewound.step,
            abandoned_call_id=rewound.call_id,
            outcome=answer.outcome,
        )
        return answer
