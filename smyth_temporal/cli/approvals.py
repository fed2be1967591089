"""``smyth approvals``, ``approve`` and ``reject``: human decisions on gated tool calls."""

from __future__ import annotations

import getpass
import json
import re
import socket
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from smyth_temporal.cli._common import CommonOptions, command, non_empty, print_json, run
from smyth_temporal.cli._output import format_approvals, format_decided, format_sent
from smyth_temporal.clients import AgentClient
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.types.approvals import ApprovalDecision

__all__ = ["DECISION_TIMEOUT", "app"]

app = typer.Typer()

DECISION_TIMEOUT = 30.0
"""Seconds ``smyth approve``/``reject`` wait for the agent to take a decision.

A decision is an update, which a worker must accept; with no worker for the agent,
temporalio would wait forever.
"""

_WorkflowId = Annotated[
    str, typer.Argument(metavar="WORKFLOW_ID", help="the agent run's workflow id")
]
_Request = Annotated[
    str | None,
    typer.Option(
        "--request",
        metavar="ID",
        help="the approval request (default: the only pending one of the run)",
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
_NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        help="send the decision as a signal and return at once; the agent checks it later "
        "and only logs it if it is invalid",
    ),
]


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
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            parser=_sha256,
            metavar="HASH",
            help="the SHA-256 of the arguments you reviewed (request.arguments_sha256 of "
            "`smyth approvals --json`); the agent refuses the approval if they differ",
        ),
    ] = None,
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
) -> None:
    """Reject a pending tool call."""
    decision = ApprovalDecision(
        request_id=request, approved=False, by=by or _default_approver(), comment=reason
    )
    run(_decide(options, workflow_id, decision, wait=not no_wait))


async def _decide(
    options: CommonOptions, workflow_id: str, decision: ApprovalDecision, *, wait: bool
) -> None:
    """Send the decision and say what became of it."""
    agents = await AgentClient.connect(options.settings())
    outcome = await agents.decide(workflow_id, decision, wait=wait, timeout=DECISION_TIMEOUT)
    if outcome is None:
        print(format_sent(workflow_id, decision))
    else:
        print(format_decided(workflow_id, outcome.request))


def _default_approver() -> str:
    """``user@host``: who decides when ``--by`` is not given."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no passwd entry (containers)
        raise ConfigurationError(
            "cannot tell who you are; say who decides with --by NAME"
        ) from None
    return f"{user}@{socket.gethostname()}"
