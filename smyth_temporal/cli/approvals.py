"""``smyth approvals``, ``approve`` and ``reject``: human decisions on gated tool calls."""

from __future__ import annotations

import getpass
import json
import re
import socket
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from smyth_temporal.cli._common import CommonOptions, command, non_empty, print_json, run
from smyth_temporal.cli._output import format_approvals, format_decided, format_sent, status
from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest

__all__ = ["DECISION_TIMEOUT", "app"]

app = typer.Typer()

DECISION_TIMEOUT = 30.0
"""Seconds ``smyth approve``/``reject`` wait for the agent to take a decision.

A decision is an update, which a worker must accept; with no worker for the agent,
temporalio would wait forever.
"""


def _json_object(text: str) -> dict[str, Any]:
    """``--arguments``: a JSON object, as the tool's arguments are."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON ({exc}): {text}") from None
    if not isinstance(value, dict):
        raise typer.BadParameter(
            f'must be a JSON object of tool arguments, like {{"symbol": "ACME"}}, got: {text}'
        )
    return value


def _sha256(text: str) -> str:
    """``--sha256``: a hex SHA-256, so a truncated paste is a usage error, not a mismatch."""
    digest = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise typer.BadParameter(f"not a SHA-256 (64 hex digits): {text}")
    return digest


_WorkflowId = Annotated[
    str, typer.Argument(metavar="WORKFLOW_ID", help="the agent run's workflow id")
]
_Request = Annotated[
    str | None,
    typer.Option(
        "--request",
        metavar="ID",
        help="the approval request (default: the only pending one of the run, shown first "
        "and decided only with --sha256 or your confirmation)",
    ),
]
_By = Annotated[
    str | None,
    typer.Option(
        "--by",
        parser=non_empty,
        metavar="NAME",
        help="who decides, for the audit trail (default: user@host)",
    ),
]
_Sha256 = Annotated[
    str | None,
    typer.Option(
        "--sha256",
        parser=_sha256,
        metavar="HASH",
        help="the SHA-256 of the arguments you reviewed (request.arguments_sha256 of "
        "`smyth approvals --json`); the agent refuses the decision if they differ",
    ),
]
_NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        help="send the decision as a signal and return at once; the agent checks it later "
        "and only logs it if it is invalid",
    ),
]


@command(
    app,
    "approvals",
    help="List every pending approval request of every running agent, oldest first (found "
    "through the SmythPendingApprovals search attribute).",
)
def approvals(
    options: CommonOptions,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="only this tenant's agents")
    ] = None,
    json_: Annotated[
        bool,
        typer.Option("--json", help="print a JSON list of {agent, workflow_id, tenant, request}"),
    ] = False,
) -> None:
    """List the approval requests waiting for a decision."""
    run(_approvals(options, tenant, json_))


async def _approvals(options: CommonOptions, tenant: str | None, as_json: bool) -> None:
    agents = await AgentClient.connect(options.settings())
    pending = await agents.pending_approvals(tenant=tenant)
    if as_json:
        print_json([p.model_dump(mode="json") for p in pending])
    elif pending:
        print(format_approvals(pending, now=datetime.now(UTC)))
    else:
        print("no pending approvals" + (f" (tenant {tenant})" if tenant else ""))


@command(
    app,
    "approve",
    help="Approve a pending approval request: the tool runs (with --arguments instead of the "
    "model's, if given). Waits for the agent to accept the decision unless --no-wait.",
)
def approve(
    options: CommonOptions,
    workflow_id: _WorkflowId,
    request: _Request = None,
    by: _By = None,
    no_wait: _NoWait = False,
    comment: Annotated[
        str | None, typer.Option("--comment", metavar="TEXT", help="why; kept in the audit trail")
    ] = None,
    arguments: Annotated[
        dict[str, Any] | None,
        typer.Option(
            "--arguments",
            parser=_json_object,
            metavar="JSON",
            help="run the tool with these arguments instead (a JSON object, checked against "
            "the tool's schema by the agent)",
        ),
    ] = None,
    sha256: _Sha256 = None,
) -> None:
    """Approve a pending tool call."""
    decision = ApprovalDecision(
        request_id=request,
        approved=True,
        by=by or _default_approver(),
        comment=comment,
        arguments=arguments,
        arguments_sha256=sha256,
    )
    run(_decide(options, workflow_id, decision, wait=not no_wait))


@command(
    app,
    "reject",
    help="Reject a pending approval request: the tool does not run and the model is told "
    "who rejected it and why. Waits for the agent to accept the decision unless --no-wait.",
)
def reject(
    options: CommonOptions,
    workflow_id: _WorkflowId,
    request: _Request = None,
    by: _By = None,
    no_wait: _NoWait = False,
    reason: Annotated[
        str | None, typer.Option("--reason", metavar="TEXT", help="why; shown to the model")
    ] = None,
    sha256: _Sha256 = None,
) -> None:
    """Reject a pending tool call."""
    decision = ApprovalDecision(
        request_id=request,
        approved=False,
        by=by or _default_approver(),
        comment=reason,
        arguments_sha256=sha256,
    )
    run(_decide(options, workflow_id, decision, wait=not no_wait))


async def _decide(
    options: CommonOptions, workflow_id: str, decision: ApprovalDecision, *, wait: bool
) -> None:
    """Send the decision and say what became of it."""
    agents = await AgentClient.connect(options.settings())
    if decision.request_id is None:
        decision = await _pinned(agents, workflow_id, decision)
    outcome = await agents.decide(workflow_id, decision, wait=wait, timeout=DECISION_TIMEOUT)
    if outcome is None:
        print(format_sent(workflow_id, decision))
    else:
        print(format_decided(workflow_id, outcome.request))


async def _pinned(
    agents: AgentClient, workflow_id: str, decision: ApprovalDecision
) -> ApprovalDecision:
    """Without ``--request``: show the only pending request and pin the decision to it.

    "The only pending request" is whatever is pending when the decision arrives,
    which may not be the call the person looked at: the request is shown, and decided
    only with the hash of its arguments (``--sha256``) or the person's confirmation
    at a terminal, and then by its id.
    """
    agents.identity.permit("approve")  # a key that may not decide is told so first
    request = await agents.pending_request(workflow_id, timeout=DECISION_TIMEOUT)
    status(format_request(workflow_id, request))
    if decision.arguments_sha256 is None:
        verb = "approve" if decision.approved else "reject"
        if not sys.stdin.isatty():
            raise typer.BadParameter(
                f"to {verb} without --request, pass --sha256 with the arguments_sha256 of "
                "the request shown above (or confirm it at a terminal): the only pending "
                "request may not be the one you reviewed"
            )
        if not _confirmed(f"{verb} {request.id}? [y/N] "):
            status(f"nothing decided: {request.id} is still pending")
            raise typer.Exit(1)
        decision = decision.model_copy(update={"arguments_sha256": request.arguments_sha256})
    return decision.model_copy(update={"request_id": request.id})


def _confirmed(question: str) -> bool:
    """Ask on stderr and read the answer from stdin (stdout keeps only the outcome)."""
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def format_request(workflow_id: str, request: ApprovalRequest) -> str:
    """A pending request as a person reviews it: tool, arguments, their hash, reason."""
    arguments = json.dumps(request.arguments, ensure_ascii=False, separators=(",", ":"))
    lines = [
        f"pending request {request.id} on {workflow_id}: {request.tool} {arguments}",
        f"  arguments_sha256: {request.arguments_sha256}",
    ]
    if request.reason:
        lines.append(f"  reason: {request.reason}")
    return "\n".join(lines)


def _default_approver() -> str:
    """``user@host``: who decides when ``--by`` is not given."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (containers)
        raise ConfigurationError(
            "cannot tell who you are; say who decides with --by NAME"
        ) from None
    return f"{user}@{socket.gethostname()}"
