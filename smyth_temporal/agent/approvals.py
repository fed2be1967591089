"""The rule that decides whether an approval decision can be applied (pure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest

__all__ = ["InvalidDecision", "check_decision"]


class InvalidDecision(ValueError):
    """A decision that cannot be applied; the message says why, for the person deciding."""


def check_decision(
    decision: ApprovalDecision,
    requests: Mapping[str, ApprovalRequest],
    validate_arguments: Callable[[str, Mapping[str, Any]], dict[str, Any]],
) -> ApprovalRequest:
    """Find the request a decision is for, and check that it can be applied.

    Args:
        decision: The decision.
        requests: Every request of the run, by id.
        validate_arguments: Validates edited arguments for a tool name (raises
            ``ValueError`` with a readable message when they do not fit).

    Returns:
        The pending request the decision applies to.

    Raises:
        InvalidDecision: Unknown or already decided request, a hash that does not
            match, edited arguments that do not fit, or an ambiguous decision.
    """
    pending = [r for r in requests.values() if r.status == "pending"]
    if decision.request_id is None:
        if not pending:
            raise InvalidDecision("no approval request is pending")
        if len(pending) > 1:
            ids = ", ".join(r.id for r in pending)
            raise InvalidDecision(f"{len(pending)} requests are pending ({ids}): name one")
        request = pending[0]
    else:
        found = requests.get(decision.request_id)
        if found is None:
            known = ", ".join(r.id for r in pending) or "none pending"
            raise InvalidDecision(f"unknown approval request {decision.request_id!r} ({known})")
        request = found
    if request.status != "pending":
        by = request.decision.by if request.decision else "nobody"
        raise InvalidDecision(f"request {request.id} is already {request.status} (by {by})")
    if decision.arguments_sha256 and decision.arguments_sha256 != request.arguments_sha256:
        raise InvalidDecision(
            f"request {request.id}: arguments_sha256 does not match the requested arguments "
            f"({request.arguments_sha256}); they are not what the approver saw"
        )
    if decision.arguments is not None:
        if not decision.approved:
            raise InvalidDecision("edited arguments only make sense with an approval")
        try:
            validate_arguments(request.tool, decision.arguments)
        except ValueError as exc:
            raise InvalidDecision(
                f"request {request.id}: edited arguments rejected: {exc}"
            ) from None
    return request
