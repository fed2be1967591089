"""The approval part of the demo: notice a request, find it again, and get it decided.

By default the script approves, pinning the hash of the arguments it printed; with
``interactive`` (on a terminal) it prints the ``smyth approve`` command and waits for
the person running the demo to decide. Each request is handled in a task of its own,
so the scenario's loop keeps printing and measuring meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import shlex
import time
from collections.abc import Sequence

from temporalio.service import RPCError

from smyth_temporal.clients import AgentClient
from smyth_temporal.demo._checks import (
    ApprovalProof,
    approve_command,
    check_approval,
    history_facts,
)
from smyth_temporal.demo._example import Execution
from smyth_temporal.demo._observed import Observed, SeenApproval
from smyth_temporal.demo._options import DemoError
from smyth_temporal.demo._render import Narrator
from smyth_temporal.exceptions import SmythError
from smyth_temporal.settings import Settings
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.visibility import PENDING_APPROVALS_ATTRIBUTE

__all__ = ["APPROVAL_PAUSE", "APPROVER", "Approver"]

APPROVER = "demo-script"
"""Who approves, in the audit trail, when the demo decides itself."""

APPROVAL_PAUSE = 1.0
"""Seconds the demo leaves a request pending before it approves, so it can be seen
(and so ``AgentClient.pending_approvals()``, eventually consistent, can list it)."""

_LIST_TIMEOUT = 4.0
"""Seconds one ``pending_approvals()`` call may take (a busy visibility store)."""
_VISIBILITY_TIMEOUT = 10.0
"""Seconds to wait for the visibility store to list a pending request."""
_VISIBILITY_INTERVAL = 0.2


class Approver:
    """Gets every approval request of the demo's run decided, and proves each."""

    def __init__(
        self,
        agents: AgentClient,
        narrator: Narrator,
        observed: Observed,
        *,
        settings: Settings,
        interactive: bool,
    ) -> None:
        """Decide the requests of ``observed``'s run.

        Args:
            agents: The demo's client.
            narrator: Where to print.
            observed: What the demo saw; its ``approvals`` are kept up to date here.
            settings: Where the demo's server is (for the command a person runs).
            interactive: Wait for a person instead of approving.
        """
        self.agents = agents
        self.narrator = narrator
        self.observed = observed
        self.settings = settings
        self.interactive = interactive
        self.tasks: list[asyncio.Task[None]] = []
        """One per request, deciding it."""
        self._human_wait = 0.0
        self._waiting_since: float | None = None

    def take_decisions(self, state: AgentState, *, sent: float) -> None:
        """Take in the decisions a state (of a query sent at ``sent``) shows."""
        for request in state.approvals:
            approval = self.observed.approvals.get(request.id)
            if approval is None or approval.decided.is_set():
                continue
            if request.status == "pending":
                # Still undecided when this query left: nothing of it can have run before.
                approval.not_before = max(approval.not_before, sent)
            else:
                self._decided(approval, request)

    def take_requests(self, state: AgentState) -> None:
        """Start deciding every pending request of ``state`` not seen before."""
        for request in state.pending_approvals:
            if request.id in self.observed.approvals:
                continue
            approval = SeenApproval(request=request, seen=time.time())
            self.observed.approvals[request.id] = approval
            self.tasks.append(asyncio.create_task(self._decide(approval)))

    def check(self) -> None:
        """Raise what went wrong in deciding a request, if anything has."""
        for deciding in self.tasks:
            if deciding.done():
                deciding.result()

    async def wait_printed(self, timeout: float) -> None:
        """Wait (up to ``timeout``) for decisions not printed yet, e.g. a person's."""
        if self.tasks:
            done, _ = await asyncio.wait(self.tasks, timeout=timeout)
            for decided in done:
                decided.result()

    async def cancel(self) -> None:
        """Stop deciding (the demo is over, one way or another)."""
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def human_seconds(self) -> float:
        """Seconds a person has taken to decide so far (they do not count as the demo's)."""
        waiting = 0.0 if self._waiting_since is None else time.time() - self._waiting_since
        return self._human_wait + waiting

    async def prove(self, executions: Sequence[Execution]) -> list[ApprovalProof]:
        """Check every request seen against the execution ledger and the run's history."""
        final = self.observed.final_state
        handle = self.agents.client.get_workflow_handle(self.observed.workflow_id)
        facts = history_facts([event async for event in handle.fetch_history_events()])
        proofs = []
        for approval in self.observed.approvals.values():
            request = approval.request
            if final is not None:
                request = next((r for r in final.approvals if r.id == request.id), request)
            proof = check_approval(request, executions, facts, not_before=approval.not_before)
            if approval.listed is None:
                proof.problems.append(
                    f"AgentClient.pending_approvals() never listed request {request.id}"
                )
            proofs.append(proof)
        return proofs

    def _decided(self, approval: SeenApproval, request: ApprovalRequest) -> None:
        """Record and print a decision, once.

        It comes from the update's answer or from a state, whichever the demo gets first.
        """
        if approval.decided.is_set():
            return
        approval.request = request
        approval.decided.set()
        self.narrator.decided(request)

    async def _decide(self, approval: SeenApproval) -> None:
        """Show a pending request, find it by search attribute, and get it decided."""
        request, workflow_id = approval.request, self.observed.workflow_id
        self.narrator.request(request)
        await self._find_listed(approval)
        if self.interactive:
            await self._wait_for_person(approval)
            return
        # Leave it pending for a moment: a person would take minutes, the demo a second.
        await asyncio.sleep(max(0.0, approval.seen + APPROVAL_PAUSE - time.time()))
        self.narrator.line(
            "approve",
            f"AgentClient.approve(workflow_id, {request.id!r}, by={APPROVER!r}, "
            f"arguments_sha256='{request.arguments_sha256[:16]}…'): the hash printed above",
            wrap=True,
        )
        approval.sent = approval.not_before = time.time()
        outcome = await self.agents.approve(
            workflow_id,
            request.id,
            by=APPROVER,
            comment="approved by smyth demo",
            arguments_sha256=request.arguments_sha256,
        )
        if outcome is None:  # only with wait=False
            raise DemoError(f"the agent did not answer the approval of {request.id}")
        self._decided(approval, outcome.request)

    async def _find_listed(self, approval: SeenApproval) -> None:
        """Wait until ``AgentClient.pending_approvals()`` lists the request.

        It finds waiting agents through the ``SmythPendingApprovals`` search attribute,
        with no workflow id. Visibility is eventually consistent, so it may take a
        moment; the summary reports a request it never listed as a problem.
        """
        deadline = approval.seen + _VISIBILITY_TIMEOUT
        while time.time() < deadline:
            # One slow answer (a busy visibility store) must not stall the demo.
            with contextlib.suppress(TimeoutError, SmythError, RPCError):
                async with asyncio.timeout(_LIST_TIMEOUT):
                    listed = await self.agents.pending_approvals()
                if any(
                    pending.workflow_id == self.observed.workflow_id
                    and pending.request.id == approval.request.id
                    for pending in listed
                ):
                    approval.listed = time.time()
                    self.narrator.line(
                        "approvals",
                        f"AgentClient.pending_approvals() finds it too, with no workflow "
                        f"id ({PENDING_APPROVALS_ATTRIBUTE.name} > 0), "
                        f"{approval.listed - approval.seen:.1f}s after it was seen",
                        wrap=True,
                    )
                    return
            await asyncio.sleep(_VISIBILITY_INTERVAL)
        self.narrator.line(
            "approvals",
            f"AgentClient.pending_approvals() did not list it within {_VISIBILITY_TIMEOUT:g}s",
            wrap=True,
        )

    async def _wait_for_person(self, approval: SeenApproval) -> None:
        """Print the command that decides, then wait for a decision.

        The scenario's loop keeps polling the state; it notices the decision (or the
        request's expiry) and prints it.
        """
        request, workflow_id = approval.request, self.observed.workflow_id
        by = _user()
        defaults: Settings | None
        try:
            defaults = Settings.load()
        except SmythError:
            defaults = None
        command = approve_command(
            workflow_id, request, by=by, settings=self.settings, defaults=defaults
        )
        reject = shlex.join(["smyth", "reject", workflow_id, "--by", by, "--reason", "why"])
        self.narrator.ask(command, reject)
        self._waiting_since = time.time()
        try:
            await approval.decided.wait()
        finally:
            self._human_wait += time.time() - self._waiting_since
            self._waiting_since = None


def _user() -> str:
    """Who runs the demo, for the ``--by`` of the command it prints."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (containers)
        return "you"
