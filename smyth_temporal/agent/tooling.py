"""Running a tool call: one path for every tool, whatever runs it.

Workflow code. ``ToolRunner.call`` takes a call through the same four stages for
``@tool`` functions, the built-in tools (``remember``, ``recall``, ``delegate``) and
MCP tools (``agent.mcp``):

1. validate: the tool exists and the arguments fit its schema;
2. gate: a call that needs a person's approval waits for the decision;
3. execute: the tool's ``executor`` runs it (its activity, or a runtime component);
4. record: usage (every executed call counts), the log, and the result message.

Whatever goes wrong (an unknown tool, arguments that do not fit, a rejection, a tool
that still fails after its retries) becomes the result, so the model can correct
itself; only a policy that fails the run (an expired approval with
``on_timeout="fail"``) raises.

Calls are known by the ids the workflow gives them (``assign_call_ids``: step and
position), never by the model's; approval request ids and idempotency keys follow. A
gated call runs only with the arguments whose hash was approved (or the approver's
edit), checked again right before it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal.agent._commands import call_tool_activity
from smyth_temporal.agent.approvals import Approvals, refusal
from smyth_temporal.agent.reconcile import OutcomeUnknown, Reconciler, unknown_reason
from smyth_temporal.agent.run import Run
from smyth_temporal.exceptions import ToolArgumentsError, ToolCallError
from smyth_temporal.tools import (
    ACTIVITY_EXECUTOR,
    ARGUMENT_BOUNDS_PATCH,
    MCP_EXECUTOR,
    RECONCILE_PATCH,
    RECONCILE_UNKNOWN,
    Tool,
    ToolExecutor,
)
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.approvals import ApprovalRequest, arguments_sha256
from smyth_temporal.types.events import ToolCallFinished, ToolCallScheduled
from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.tools import ToolInvocation

if TYPE_CHECKING:
    from smyth_temporal.agent.mcp import MCPTools

__all__ = [
    "APPROVED_ARGUMENTS_PATCH",
    "CALL_IDS_PATCH",
    "TOOL_CALL_CAP_PATCH",
    "ToolRunner",
    "failed",
    "idempotency_key",
    "limited",
]

CALL_IDS_PATCH = "smyth-call-ids"
"""Runs that pass here name calls by step and position and key them by run (0.8.0).

Runs started before keep the model's ids (``unique_call_ids``) and their keys, as
their recorded approval decisions refer to request ids built from them.
"""

APPROVED_ARGUMENTS_PATCH = "smyth-approved-arguments"
"""Refuse a gated call whose arguments are not the approved ones (0.8.0).

Asked only when the check fails, so a run that never broke the rule replays as
recorded; one that did (with colliding ids, before 0.8.0) replays what it did then.
"""

TOOL_CALL_CAP_PATCH = "smyth-tool-call-cap"
"""Answer calls past ``AgentConfig.max_tool_calls_per_turn`` unrun (0.8.0; asked only
for a turn over the cap)."""


class ToolRunner:
    """Validates, gates, executes and records tool calls.

    Args:
        run: The agent's run (conversation, logger, tenant, interrupts: calls not
            started when one waits are not run; ``run.tools``: the tools offered).
        approvals: The agent's approvals.
        executors: Executors by name, besides ``activity`` (and ``mcp``, with ``mcp``).
        mcp: The agent's MCP servers, whose calls run as their ``call_tool`` activity.
        workflow_id: The agent's workflow id, for idempotency keys.
        first_run_id: The run id of the first run under this workflow id (the same
            across continue-as-new, a new one for a new run), for idempotency keys.
        max_calls: Calls of one turn that run (default: the agent's
            ``AgentConfig.max_tool_calls_per_turn``).
        patched: ``workflow.patched`` (a stand-in in unit tests).

    Added in 0.3.0. Changed in 0.8.0: ``first_run_id``, ``max_calls``, ``patched``.
    Changed in 0.9.0: takes the ``Run`` instead of callbacks, and ``mcp``.
    """

    def __init__(
        self,
        run: Run,
        approvals: Approvals,
        *,
        executors: Mapping[str, ToolExecutor],
        mcp: MCPTools | None = None,
        workflow_id: Callable[[], str] = lambda: workflow.info().workflow_id,
        first_run_id: Callable[[], str] = lambda: workflow.info().first_execution_run_id,
        max_calls: int | None = None,
        patched: Callable[[str], bool] = workflow.patched,
    ) -> None:
        self._run = run
        self._conversation = run.conversation
        self._approvals = approvals
        self._log = run.log
        self._workflow_id = workflow_id
        self._first_run_id = first_run_id
        self._max_calls = max_calls or run.config.max_tool_calls_per_turn
        self._patched = patched
        self._executors: dict[str, ToolExecutor] = {ACTIVITY_EXECUTOR: self._run_activity}
        if mcp is not None:
            self._executors[MCP_EXECUTOR] = functools.partial(mcp.run, self)
        self._executors.update(executors)
        self._reconciler = Reconciler(run, patched=patched)

    def _bounded(self) -> bool:
        # Asked only for arguments past the bounds: older runs validated without them.
        return self._patched(ARGUMENT_BOUNDS_PATCH)

    def find(self, name: str) -> Tool | None:
        """The offered tool called ``name`` (this turn's, see ``Run.tools``)."""
        return next((t for t in self._run.tools() if t.name == name), None)

    def request_approval(
        self, call: ToolCall, *, reason: str | None = None
    ) -> ApprovalRequest | None:
        """Record an approval request for ``call`` if its tool requires one.

        A call that repeats a side effect a rewind left behind asks only once its
        reconcile hook has answered (see ``agent.reconcile``).
        """
        if self._reconciler.waiting(self.find(call.name), call):
            return None
        return self._approvals.request(
            call,
            self.find(call.name),
            step=self._conversation.step,
            reason=reason if reason is not None else self._conversation.reason_for(call),
        )

    async def call(self, call: ToolCall) -> Message:
        """Run one call through validate, gate, execute, record; the result message."""
        spec = self.find(call.name)
        if spec is None:
            known = ", ".join(t.name for t in self._run.tools()) or "none"
            return self.error(call, f"unknown tool '{call.name}'. Available tools: {known}.")
        try:
            arguments = spec.validate_arguments(call.arguments, bounded=self._bounded)
        except ToolArgumentsError as exc:
            return self.error(call, str(exc))
        rewound = self._reconciler.claim(spec, call, arguments)
        if rewound is None:
            request = self.request_approval(call)
        else:
            invocation = self.invocation(spec, call, arguments)
            answer = await self._reconciler.ask(spec, invocation, rewound)
            if answer.outcome == "done":
                # It happened before the rewind: its result stands, nothing runs again.
                return self._result(call, str(answer.result))
            request = (
                self._ask_unknown(call, spec, rewound.idempotency_key, answer.reason)
                if answer.outcome == "unknown"
                else self.request_approval(call)
            )
        if request is not None:
            gated = await self._gate(request, spec, call, arguments)
            if isinstance(gated, Message):
                return gated
            arguments = gated
        return await self._execute(spec, call, arguments)

    async def _gate(
        self, request: ApprovalRequest, spec: Tool, call: ToolCall, arguments: dict[str, Any]
    ) -> dict[str, Any] | Message:
        """Wait for ``request``'s decision: the arguments to run with, or the refusal."""
        await self._approvals.wait(request)
        decision = request.decision
        if decision is None or not decision.approved:
            return self.error(call, refusal(request))
        unapproved = _unapproved(request, spec, call, arguments)
        if unapproved is not None and self._patched(APPROVED_ARGUMENTS_PATCH):
            self._log.error(
                "approval.arguments_mismatch",
                request_id=request.id,
                tool=call.name,
                call_id=call.id,
                problem=unapproved,
            )
            return self.error(call, f"not run: {unapproved}")
        if decision.arguments is not None:
            try:
                arguments = spec.validate_arguments(decision.arguments)
            except ToolArgumentsError as exc:
                return self.error(call, f"not run: the approver's edit no longer fits. {exc}")
        request.executed_arguments_sha256 = arguments_sha256(arguments)
        return arguments

    def _ask_unknown(
        self, call: ToolCall, spec: Tool, key: str, why: str | None
    ) -> ApprovalRequest | None:
        """Ask a person whether to run a call whose earlier outcome is unknown."""
        return self._approvals.request(
            call,
            spec,
            step=self._conversation.step,
            reason=unknown_reason(spec.name, key, why),
            unknown_outcome=True,
        )

    async def _execute(self, spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> Message:
        """Run an approved (or ungated) call with its executor; record the result."""
        executor = self._executors.get(spec.executor)
        if executor is None:
            known = ", ".join(sorted(self._executors))
            return self.error(
                call, f"tool '{call.name}' has no executor {spec.executor!r} ({known})"
            )
        self._conversation.count_tool_call()
        self._conversation.publish(
            ToolCallScheduled(call=call, idempotency_key=self.idempotency_key(call))
        )
        try:
            content = await executor(spec, call, arguments)
        except OutcomeUnknown as exc:
            if not self._patched(RECONCILE_PATCH):
                return self.error(call, str(exc))
            return await self._decide_unknown(spec, executor, call, arguments, exc)
        except ToolCallError as exc:
            return self.error(call, str(exc))
        return self._finished(call, content)

    async def _decide_unknown(
        self,
        spec: Tool,
        executor: ToolExecutor,
        call: ToolCall,
        arguments: dict[str, Any],
        unknown: OutcomeUnknown,
    ) -> Message:
        """A retry found the outcome unknown: a person decides whether it runs again.

        An attempt may have acted before its worker died and the tool's reconcile hook
        cannot tell. Approved, the call runs again under the same idempotency key (a
        first attempt, which asks the hook nothing); rejected, it is skipped.
        """
        request = self._ask_unknown(call, spec, self.idempotency_key(call), unknown.reason)
        if request is None:
            return self.error(call, str(unknown))
        gated = await self._gate(request, spec, call, arguments)
        if isinstance(gated, Message):
            return gated
        try:
            content = await executor(spec, call, gated)
        except ToolCallError as exc:
            return self.error(call, str(exc))
        return self._finished(call, content)

    def _finished(self, call: ToolCall, content: str) -> Message:
        self._log.info(
            "agent.tool_result", step=self._conversation.step, tool=call.name, call_id=call.id
        )
        return self._result(call, content)

    async def act(self, calls: Sequence[ToolCall]) -> list[Message]:
        """Run calls in the model's order: consecutive read-only ones concurrently.

        Every gated call of the turn asks first, so people can decide in any order.
        Each call runs through the agent's overridable ``call_tool``. Calls past
        ``max_calls`` are not run (nor asked about); each gets a result that says so,
        as every call the model made must be answered.
        """
        excess: Sequence[ToolCall] = ()
        if len(calls) > self._max_calls and self._patched(TOOL_CALL_CAP_PATCH):
            calls, excess = calls[: self._max_calls], calls[self._max_calls :]
            self._log.warning(
                "agent.tool_calls_capped",
                step=self._conversation.step,
                calls=len(calls) + len(excess),
                cap=self._max_calls,
            )
        for each in calls:
            self.request_approval(each)
        results: list[Message] = []
        batch: list[ToolCall] = []
        for each in calls:
            spec = self.find(each.name)
            if spec is not None and spec.read_only:
                batch.append(each)
                continue
            results += await self._batch(batch)
            batch = []
            results += await self._batch([each])
        results += await self._batch(batch)
        # Logged once above (agent.tool_calls_capped), not once per call.
        too_many = (
            f"Error: not run: at most {self._max_calls} tool calls of one turn run. "
            "Make fewer calls per turn, and repeat the ones still needed."
        )
        return results + [self._result(each, too_many, error=True) for each in excess]

    async def _batch(self, calls: Sequence[ToolCall]) -> list[Message]:
        # An interrupt stops the turn between batches: what started finishes, and
        # every call not started gets a result that says so (the model sees each call
        # answered); an approval it asked for is withdrawn.
        if not calls or not self._run.interrupts.requested():
            return await _concurrently(calls, self._run.hooks.call_tool)
        for each in calls:
            request = self.request_approval(each)
            if request is not None:
                self._approvals.withdraw(request)
            self._reconciler.release(each)
        return [self.error(each, "not run: the turn was interrupted") for each in calls]

    def error(self, call: ToolCall, text: str) -> Message:
        """The result message reporting a failed call to the model."""
        self._log.warning(
            "agent.tool_error", step=self._conversation.step, tool=call.name, error=text
        )
        return self._result(call, f"Error: {text}", error=True)

    def idempotency_key(self, call: ToolCall) -> str:
        """The key a tool sees for ``call``: the same on every retry, unique per call.

        Stable across retries, replays, crashes and continue-as-new; different for
        every call of the run and for a new run under the same workflow id (see
        ``idempotency_key``). Changed in 0.8.0: the first run's id, encoded parts.
        """
        step = self._conversation.step
        if not self._patched(CALL_IDS_PATCH):
            return f"{self._workflow_id()}/{step}/{call.id}"  # runs started before 0.8.0
        return idempotency_key(self._workflow_id(), self._first_run_id(), step, call.id)

    def _result(self, call: ToolCall, content: str, *, error: bool = False) -> Message:
        finished = ToolCallFinished(call_id=call.id, name=call.name, content=content, error=error)
        self._conversation.publish(finished)
        return Message.tool_result(call, content, step=self._conversation.step)

    def invocation(self, spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> ToolInvocation:
        """What an activity that runs ``call`` is handed (validated arguments, key, step)."""
        return ToolInvocation(
            tool=spec.name,
            call_id=call.id,
            arguments=arguments,
            idempotency_key=self.idempotency_key(call),
            agent=workflow.info().workflow_type,
            step=self._conversation.step,
            tenant=self._run.tenant,
        )

    @contextlib.contextmanager
    def in_flight(self, call: ToolCall) -> Iterator[None]:
        """Show ``call`` in ``AgentState.pending_tool_calls`` while the block runs."""
        self._conversation.pending[call.id] = call
        try:
            yield
        finally:
            del self._conversation.pending[call.id]

    async def _run_activity(self, spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
        invocation = self.invocation(spec, call, arguments)
        with self.in_flight(call):
            try:
                outcome = await call_tool_activity(spec, invocation)
            except ActivityError as exc:
                cause = exc.cause
                if isinstance(cause, ApplicationError) and cause.type == RECONCILE_UNKNOWN:
                    reason = str(cause.details[0]) if cause.details else cause.message
                    raise OutcomeUnknown(str(failed(call, exc)), reason) from exc
                raise failed(call, exc) from exc
        return outcome.content


def idempotency_key(workflow_id: str, first_run_id: str, step: int, call_id: str) -> str:
    """``workflow_id/first_run_id/step/call_id``, each part with ``%`` and ``/`` escaped.

    Escaping makes the key injective: a ``/`` in a workflow id cannot make two
    workflows' keys equal. The first run's id tells apart sessions started one after
    the other under the same workflow id (whose steps and call ids repeat).

    Added in 0.8.0.
    """
    return "/".join(_escape(part) for part in (workflow_id, first_run_id, str(step), call_id))


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace("/", "%2F")


def _unapproved(
    request: ApprovalRequest, spec: Tool, call: ToolCall, arguments: Mapping[str, Any]
) -> str | None:
    """Why ``call`` may not run on ``request``'s approval; ``None`` if it may.

    The request must be this call's (its tool, the hash of these arguments) and not
    used already: the approver saw and approved exactly that. An edit is the
    approver's own, so it runs whatever the model asked.
    """
    if request.executed_arguments_sha256 is not None:
        return f"approval {request.id} was already used by another call"
    if request.tool != spec.name or request.call_id != call.id:
        return f"approval {request.id} is for another call ('{request.tool}' {request.call_id})"
    edited = request.decision is not None and request.decision.arguments is not None
    if not edited and arguments_sha256(arguments) != request.arguments_sha256:
        return (
            f"its arguments are not the ones approved in {request.id} "
            f"(sha256 {request.arguments_sha256})"
        )
    return None


def failed(call: ToolCall, exc: ActivityError) -> ToolCallError:
    """The error reporting a tool activity that still failed after its retries."""
    return ToolCallError(f"tool '{call.name}' failed: {exc.cause or exc}")


def limited(tools: Sequence[Tool], input: AgentInput | None) -> list[Tool]:
    """The tools a parent's ``AgentLimits`` (``input.limits``) leave a sub-agent."""
    limits = input.limits if input is not None else None
    if limits is None or limits.tools is None:
        return list(tools)
    allowed = set(limits.tools)
    return [t for t in tools if t.qualified_name in allowed]


async def _concurrently(
    calls: Sequence[ToolCall], call: Callable[[ToolCall], Any]
) -> list[Message]:
    if len(calls) <= 1:
        return [await call(each) for each in calls]
    # gather keeps the order of its arguments and schedules deterministically.
    return list(await asyncio.gather(*(call(each) for each in calls)))
