"""Human approvals: recording requests, checking and applying decisions, waiting.

Workflow code. ``Approvals`` owns every ``ApprovalRequest`` of a run. ``check_decision``
is the one rule that decides whether a decision can be applied: the update's
validator and the signal handler both use it, so a refused decision leaves no trace
in history. Waiting is a ``workflow.wait_condition`` with the request's deadline, so
an agent waiting a week for a person holds no worker resources once evicted.

A request made under an ``ApprovalPolicy`` (``agent.approval_policy``) counts each
person's decision towards its quorum, and waits through its escalation steps (each a
durable timer) before its deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from smyth_temporal._telemetry import approval_decided, approval_requested
from smyth_temporal.agent._update_order import UpdateAcceptance
from smyth_temporal.agent.approval_policy import (
    POLICY_PATCH,
    PolicyTerms,
    await_escalations,
    count_vote,
    progress_tags,
    start_review,
)
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.notifications import start_notifications
from smyth_temporal.agent.run import Run
from smyth_temporal.agent.visibility import publish_approvals
from smyth_temporal.exceptions import (
    ApprovalExpiredError,
    InvalidDecisionError,
    ToolArgumentsError,
)
from smyth_temporal.tools import ARGUMENT_BOUNDS_PATCH, Tool
from smyth_temporal.types.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalReview,
    ApprovalStatus,
    arguments_sha256,
)
from smyth_temporal.types.events import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalRequested,
    ApprovalVoted,
)
from smyth_temporal.types.messages import ToolCall
from smyth_temporal.types.quorum import Quorum

__all__ = ["SIGNALLED_DECISIONS_PATCH", "Approvals", "check_decision", "refusal"]

SIGNALLED_DECISIONS_PATCH = "smyth-signalled-decisions"
"""A decision signalled with the event that makes its request is applied (0.8.0).

Before, temporalio handed the signal to the run first, found no request and dropped
it. Asked only for a signalled decision that does not fit when it arrives, so runs
whose decisions all fitted replay as recorded.
"""

ArgumentsValidator = Callable[[str, Mapping[str, Any]], dict[str, Any]]
"""Validates edited arguments for a tool name; raises ``ValueError`` if they do not fit."""


class Approvals:
    """The approval requests of one run, and the decisions on them.

    Args:
        run: The agent's run (config: default timeouts and policies; conversation:
            its status shows the wait; interrupts: one ends a wait in a rejection).
        on_change: Called whenever the set of pending requests may have changed
            (default: ``publish``, to visibility).
        clock: The current time (``workflow.now`` in a workflow; a fixed clock in
            unit tests).
        find: The tool the agent has under a name now, to check edited arguments
            (default: ``config.tool``; the agent adds its MCP tools).
        patched: ``workflow.patched`` (a stand-in in unit tests).
        replaying: ``workflow.unsafe.is_replaying`` (a stand-in in unit tests).
        activation: Tells activations apart (the history length they were made at).

    Added in 0.3.0. Changed in 0.3.0: ``find``. Changed in 0.8.0: ``patched``,
    ``replaying``, ``activation``. Changed in 0.9.0: takes the ``Run`` (config,
    conversation, logger, interrupts) instead of them one by one.
    """

    def __init__(
        self,
        run: Run,
        *,
        on_change: Callable[[], None] | None = None,
        clock: Callable[[], datetime] = workflow.now,
        find: Callable[[str], Tool | None] | None = None,
        patched: Callable[[str], bool] = workflow.patched,
        replaying: Callable[[], bool] = workflow.unsafe.is_replaying,
        activation: Callable[[], int] = lambda: workflow.info().get_current_history_length(),
    ) -> None:
        self.requests: dict[str, ApprovalRequest] = {}
        """Every request of the run (and, after continue-as-new, the recent ones), by id."""
        self._run = run
        self._config = run.config
        self._conversation = run.conversation
        self._log = run.log
        # ``publish`` looked up when called: an agent may wrap it on its approvals.
        self._on_change = on_change or (lambda: self.publish())
        self._clock = clock
        self._interrupted = run.interrupts.requested
        self._find = find or run.config.tool
        self._patched = patched
        self._replaying = replaying
        self._activation = activation
        self._reviews: list[asyncio.Task[None]] = []  # reviewers racing the people
        self._builtin: dict[str, Tool] = {}

    @property
    def config(self) -> AgentConfig:
        """The agent's config. Added in 0.8.0."""
        return self._config

    def _bounded(self) -> bool:
        # Asked only for arguments past the bounds: older runs validated without them.
        return self._patched(ARGUMENT_BOUNDS_PATCH)

    def register(self, tool: Tool) -> None:
        """Know ``tool`` too when checking edited arguments (a built-in, never offered)."""
        self._builtin[tool.name] = tool

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests still waiting for a decision."""
        return [r for r in self.requests.values() if r.status == "pending"]

    def publish(self) -> None:
        """Show the pending requests in the run's search attributes, if the agent has them.

        Added in 0.9.0 (before, the agent's own callback).
        """
        if self._config.search_attributes:
            publish_approvals(
                self.pending,
                self._conversation.status,
                self._run.tenant,
                progress=progress_tags(list(self.requests.values())),
            )

    def request(
        self,
        call: ToolCall,
        spec: Tool | None,
        *,
        step: int,
        reason: str | None,
        unknown_outcome: bool = False,
    ) -> ApprovalRequest | None:
        """Record a request for ``call`` if its tool requires one (idempotent).

        Calls to unknown tools, with invalid arguments, or that the tool's predicate
        lets through get none. With ``unknown_outcome``, the call's earlier outcome is
        unknown (its reconcile hook could not tell): it is asked about whatever the tool
        requires, as a request of its own (id ``apr-<step>-<call>-unknown``), so a
        decision already used by the call never approves it again.

        Changed in 0.10.0: ``unknown_outcome``.
        """
        request_id = _request_id(step, call) + ("-unknown" if unknown_outcome else "")
        existing = self.requests.get(request_id)
        if existing is not None:
            return existing
        if spec is None or not (spec.requires_approval or unknown_outcome):
            return None
        try:
            arguments = spec.validate_arguments(call.arguments, bounded=self._bounded)
        except ToolArgumentsError:
            return None
        try:
            gated = unknown_outcome or spec.needs_approval(arguments)
        except Exception as exc:
            # A broken predicate must not let a gated call through: ask a person.
            self._log.error("approval.predicate_failed", tool=spec.name, error=repr(exc))
            gated = True
        if not gated:
            return None
        now = self._clock()
        terms = self._terms(spec)
        request = ApprovalRequest(
            id=request_id,
            tool=spec.name,
            call_id=call.id,
            step=step,
            arguments=arguments,
            arguments_sha256=arguments_sha256(arguments),
            reason=reason,
            requested_at=now,
            deadline=now + terms.deadline,
            on_timeout=terms.on_timeout,
            policy=terms.rule,
            requested_by=terms.requested_by,
        )
        self.requests[request.id] = request
        self._log.info("approval.requested", request_id=request.id, tool=spec.name)
        approval_requested(spec.name)
        self._conversation.publish(ApprovalRequested(request=request.model_copy()))
        if request.policy is not None:
            self._notify(request, request.policy.notify, request.policy.roles)
        if terms.reviewer is not None and request.policy is not None:
            name, handle = terms.reviewer.name, start_review(request, terms.reviewer)
            self._reviews.append(asyncio.create_task(self._reviewed(request, name, handle)))
        self._on_change()
        return request

    async def _reviewed(
        self, request: ApprovalRequest, name: str, handle: workflow.ActivityHandle[ApprovalReview]
    ) -> None:
        try:
            review = await handle
        except ActivityError as exc:
            # A reviewer that fails says nothing: the people decide, as without one.
            self._log.warning(
                "approval.review_failed",
                request_id=request.id,
                reviewer=name,
                error=str(exc.cause or exc),
            )
            return
        self.review(
            request,
            review.model_copy(update={"by": f"reviewer:{name}", "reviewed_at": self._clock()}),
        )

    def review(self, request: ApprovalRequest, review: ApprovalReview) -> None:
        """Take an automatic reviewer's verdict on ``request``.

        ``reject`` rejects a pending request at once; ``approve`` approves it only where
        the policy says ``auto_approve``; ``escalate`` applies the next escalation step
        now. The verdict is recorded on the request either way (``review.applied``
        says whether it changed anything), as ``by="reviewer:<name>"``.

        Added in 0.9.0.
        """
        quorum = Quorum.of(request)
        decides = review.verdict == "reject" or (
            review.verdict == "approve" and quorum is not None and quorum.rule.auto_approve
        )
        steps = len(quorum.rule.escalation) if quorum is not None else 0
        escalates = review.verdict == "escalate" and quorum is not None and quorum.escalated < steps
        applied = request.status == "pending" and quorum is not None and (decides or escalates)
        request.review = review.model_copy(update={"applied": applied})
        self._log.info(
            "approval.reviewed",
            request_id=request.id,
            reviewer=review.by,
            verdict=review.verdict,
            applied=applied,
        )
        if applied and decides:
            decision = ApprovalDecision(
                request_id=request.id,
                approved=review.verdict == "approve",
                by=review.by,
                comment=review.reason or None,
            )
            self.apply(request, decision)
        elif applied and quorum is not None:
            self.escalate(request, quorum.escalated)
        self._on_change()

    def _terms(self, spec: Tool) -> PolicyTerms:
        # A run that made this request before the tool had a policy replays without it.
        policy = spec.approval_policy or self._config.approval_policy
        if policy is not None and not self._patched(POLICY_PATCH):
            policy = None
        started = self._run.started
        return PolicyTerms.of(
            policy,
            deadline=spec.approval_timeout or self._config.approval_timeout,
            on_timeout=spec.on_timeout or self._config.on_approval_timeout,
            requested_by=started.started_by if started is not None else None,
        )

    def _notify(
        self,
        request: ApprovalRequest,
        channels: tuple[str, ...],
        roles: tuple[str, ...],
        *,
        escalation: int = 0,
    ) -> None:
        start_notifications(
            request,
            channels,
            agent=workflow.info().workflow_type,
            roles=roles,
            kind="escalated" if escalation else "requested",
            escalation=escalation,
            log=self._log,
            publish=self._conversation.publish,
        )

    async def wait(self, request: ApprovalRequest) -> None:
        """Wait for a decision on ``request`` until its deadline, then apply the policy.

        Raises:
            ApprovalExpiredError: The deadline passed and the policy is ``fail``.
        """
        if request.status != "pending":
            return
        previous, self._conversation.status = self._conversation.status, "awaiting_approval"
        self._on_change()

        def settled() -> bool:
            return request.status != "pending" or self._interrupted()

        try:
            escalating = request.policy is not None and request.policy.escalation
            if not escalating or not await await_escalations(
                request, settled, self._clock, lambda index: self.escalate(request, index)
            ):
                remaining = max(request.deadline - self._clock(), timedelta(0))
                await workflow.wait_condition(settled, timeout=remaining)
        except TimeoutError:
            self.expire(request)
        self.withdraw(request, publish=False)  # if still pending, an interrupt ended the wait
        self._conversation.status = previous
        self._on_change()

    def escalate(self, request: ApprovalRequest, index: int) -> None:
        """Apply step ``index`` of ``request``'s escalation: widen the roles, notify.

        Recorded on the request (``escalated_at``, the audit trail), in the event
        stream (``ApprovalEscalated``) and in the log. Added in 0.9.0.
        """
        quorum = Quorum.of(request)
        if quorum is None or request.status != "pending" or index != quorum.escalated:
            return
        step = quorum.rule.escalation[index]
        request.escalated_at.append(self._clock())
        roles = quorum.escalate().roles
        self._log.info(
            "approval.escalated",
            request_id=request.id,
            tool=request.tool,
            step=index + 1,
            roles=list(roles),
            notify=list(step.notify),
        )
        self._conversation.publish(
            ApprovalEscalated(request=request.model_copy(), escalation=index + 1, roles=list(roles))
        )
        self._notify(request, step.notify, roles, escalation=index + 1)
        self._on_change()

    def withdraw(self, request: ApprovalRequest, *, publish: bool = True) -> None:
        """Reject a pending request whose call an interrupt stopped (by ``system:interrupt``)."""
        if request.status != "pending":
            return
        decision = ApprovalDecision(
            request_id=request.id,
            approved=False,
            by="system:interrupt",
            comment="the turn was interrupted",
        )
        self.apply(request, decision)
        if publish:
            self._on_change()

    def expire(self, request: ApprovalRequest) -> None:
        """Apply ``request``'s timeout policy (no one decided before its deadline)."""
        self._log.warning("approval.expired", request_id=request.id, policy=request.on_timeout)
        if request.on_timeout == "fail":
            request.status = "expired"
            request.decided_at = self._clock()
            approval_decided(request.tool, "expired", request.decided_at - request.requested_at)
            self._conversation.publish(ApprovalExpired(request=request.model_copy()))
            self._conversation.status = "failed"
            raise ApprovalExpiredError(
                f"approval request {request.id} for tool '{request.tool}' expired at "
                f"{request.deadline.isoformat()} without a decision"
            )
        approved = request.on_timeout == "approve"
        comment = "approved" if approved else "rejected"
        decision = ApprovalDecision(
            request_id=request.id,
            approved=approved,
            by="system:timeout",
            comment=f"no decision before the deadline; {comment} by policy",
        )
        self.apply(request, decision, status="expired")

    def check(self, decision: ApprovalDecision) -> ApprovalRequest:
        """The pending request ``decision`` applies to (see ``check_decision``)."""
        return check_decision(decision, self.requests, self._validate_edit)

    async def decide(self, decision: ApprovalDecision) -> ApprovalRequest:
        """Apply a decision the update's validator accepted; the decided request.

        Validators do not run on replay, and temporalio hands an update to its handler
        before the activation's other jobs. So a decision accepted live in the workflow
        task that made its request (the validator saw the request: the run had made it
        by then) meets no request when replayed. Refusing it would fail every replay
        of the run. Instead, on replay only, the decision waits until the workflow code
        has run on the other jobs and blocks, where the original run took it; then its
        acceptance moves behind the commands made meanwhile (``UpdateAcceptance``), and
        it is applied: the replay makes the commands the original run made, in order.

        Live, a decision that does not fit is refused (its validator refused it first).

        Raises:
            InvalidDecisionError: Not replaying, and ``check`` refuses the decision.

        Added in 0.8.0.
        """
        try:
            request = self.check(decision)
        except InvalidDecisionError:
            if not self._replaying():
                raise
            acceptance = UpdateAcceptance()
            await workflow.wait_condition(lambda: self._fits(decision))
            acceptance.move_last()
            request = self.check(decision)
            self._log.info("approval.decision_replayed_late", request_id=request.id)
        self.count(request, decision)
        return request

    async def take_signalled(self, decision: ApprovalDecision) -> None:
        """Apply a decision sent as a signal; one that does not fit is logged and ignored.

        temporalio hands signals to the run before the activation's other jobs, live
        and on replay alike. A decision signalled while the model call that asks for
        its request completes (a client that saw the request pending in a workflow
        task that a crash cut off) would find no request yet: it waits until the
        workflow code has run on the rest of the activation, and is applied if it fits
        then. What still does not fit when the next activation comes is dropped (as
        before), so a decision never waits for a request made later.

        Added in 0.8.0.
        """
        if self._fits(decision):
            self.count(self.check(decision), decision)
            return
        if self._patched(SIGNALLED_DECISIONS_PATCH):
            arrived = self._activation()
            await workflow.wait_condition(
                lambda: self._activation() != arrived or self._fits(decision)
            )
            if self._activation() == arrived:
                self.count(self.check(decision), decision)
                return
        try:
            self.check(decision)
        except InvalidDecisionError as exc:
            self._log.warning("approval.invalid_decision", error=str(exc), by=decision.by)
            return
        # It fits now, in a later activation: dropped all the same (see above).
        self._log.warning("approval.late_decision", request_id=decision.request_id, by=decision.by)

    def _fits(self, decision: ApprovalDecision) -> bool:
        try:
            self.check(decision)
        except InvalidDecisionError:
            return False
        return True

    def count(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        """Apply a person's decision (already checked) to ``request``.

        Under a policy it counts towards the quorum: the request is decided once the
        quorum settles it, and until then each counted decision is published
        (``ApprovalVoted``) with the progress. Without one, it decides the request.

        Added in 0.9.0.
        """
        if request.policy is None or count_vote(request, decision) != "pending":
            self.apply(request, decision)
            return
        progress = Quorum(rule=request.policy, votes=tuple(request.votes)).progress
        self._log.info(
            "approval.vote_counted",
            request_id=request.id,
            tool=request.tool,
            approved=decision.approved,
            by=decision.by,
            progress=progress,
        )
        self._conversation.publish(ApprovalVoted(request=request.model_copy(), progress=progress))
        self._on_change()

    def apply(
        self,
        request: ApprovalRequest,
        decision: ApprovalDecision,
        *,
        status: ApprovalStatus | None = None,
    ) -> None:
        """Record ``decision`` on ``request`` (already checked)."""
        request.decision = decision.model_copy(update={"request_id": request.id})
        request.status = status or ("approved" if decision.approved else "rejected")
        request.decided_at = self._clock()
        self._log.info(
            "approval.decided",
            request_id=request.id,
            tool=request.tool,
            approved=decision.approved,
            by=decision.by,
            edited=decision.arguments is not None,
        )
        approval_decided(request.tool, request.status, request.decided_at - request.requested_at)
        event = ApprovalExpired if request.status == "expired" else ApprovalDecided
        self._conversation.publish(event(request=request.model_copy()))

    def _validate_edit(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        # Edited arguments must fit the tool as configured now (not as offered this turn).
        spec = self._find(tool) or self._builtin.get(tool)
        if spec is None:
            raise ValueError(f"the agent no longer has tool '{tool}'")
        return spec.validate_arguments(arguments)

    def carried(self, keep_decided: int) -> list[ApprovalRequest]:
        """What continue-as-new carries: every pending request, the recent decided ones."""
        requests = list(self.requests.values())
        decided = {r.id for r in [r for r in requests if r.status != "pending"][-keep_decided:]}
        return [r for r in requests if r.status == "pending" or r.id in decided]

    def restore(self, requests: list[ApprovalRequest]) -> None:
        """Take over the requests a previous run carried."""
        self.requests = {r.id: r for r in requests}


def check_decision(
    decision: ApprovalDecision,
    requests: Mapping[str, ApprovalRequest],
    validate_arguments: ArgumentsValidator,
) -> ApprovalRequest:
    """Find the request a decision is for, and check that it can be applied.

    Args:
        decision: The decision.
        requests: Every request of the run, by id.
        validate_arguments: Validates edited arguments for a tool name.

    Returns:
        The pending request the decision applies to.

    Raises:
        InvalidDecisionError: Unknown or already decided request, a hash that does
            not match, edited arguments that do not fit, an ambiguous decision, or one
            the request's policy does not count (a role it does not allow, the run's
            requester, an approver who decided already).
    """
    pending = [r for r in requests.values() if r.status == "pending"]
    if decision.request_id is None:
        if not pending:
            raise InvalidDecisionError("no approval request is pending")
        if len(pending) > 1:
            ids = ", ".join(r.id for r in pending)
            raise InvalidDecisionError(f"{len(pending)} requests are pending ({ids}): name one")
        request = pending[0]
    else:
        found = requests.get(decision.request_id)
        if found is None:
            known = ", ".join(r.id for r in pending) or "none pending"
            raise InvalidDecisionError(
                f"unknown approval request {decision.request_id!r} ({known})"
            )
        request = found
    if request.status != "pending":
        by = request.decision.by if request.decision else "nobody"
        raise InvalidDecisionError(f"request {request.id} is already {request.status} (by {by})")
    if decision.arguments_sha256 and decision.arguments_sha256 != request.arguments_sha256:
        raise InvalidDecisionError(
            f"request {request.id}: arguments_sha256 does not match the requested arguments "
            f"({request.arguments_sha256}); they are not what the approver saw"
        )
    quorum = Quorum.of(request)
    problem = quorum.refusal(decision) if quorum is not None else None
    if problem is not None:
        raise InvalidDecisionError(f"request {request.id}: {problem}")
    if decision.arguments is not None:
        if not decision.approved:
            raise InvalidDecisionError("edited arguments only make sense with an approval")
        try:
            validate_arguments(request.tool, decision.arguments)
        except ValueError as exc:
            raise InvalidDecisionError(
                f"request {request.id}: edited arguments rejected: {exc}"
            ) from None
    return request


def refusal(request: ApprovalRequest) -> str:
    """What the model is told when a gated call was not run."""
    decision = request.decision
    if request.status == "expired":
        return (
            f"the call to '{request.tool}' was not run: its approval request expired at "
            f"{request.deadline.isoformat()} without a decision. Do not retry it unchanged."
        )
    by = decision.by if decision else "an approver"
    why = f": {decision.comment}" if decision and decision.comment else ""
    return (
        f"the call to '{request.tool}' was not run: it was rejected by {by}{why}. "
        "Adapt your plan instead of retrying it unchanged."
    )


def _request_id(step: int, call: ToolCall) -> str:
    return f"apr-{step}-{call.id}"
