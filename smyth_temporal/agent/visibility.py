"""Publishing an agent's approvals to Temporal's visibility store (workflow code).

Pending requests go into the memo, which travels with visibility listings, so they
can be listed without querying the run (which needs a live worker); the status and
count go into search attributes, so waiting agents are found across all runs.

Changed in 0.7.0: the memo's requests leave out their default fields (readers restore
them with ``ApprovalRequest.model_validate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from smyth_temporal.types.agent import AgentStatus
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.visibility import (
    APPROVAL_PROGRESS_ATTRIBUTE,
    PENDING_APPROVALS_ATTRIBUTE,
    PENDING_APPROVALS_MEMO,
    STATUS_ATTRIBUTE,
)

__all__ = ["publish_approvals"]


def publish_approvals(
    pending: Sequence[ApprovalRequest],
    status: AgentStatus,
    tenant: str,
    *,
    progress: Sequence[str] | None = None,
) -> None:
    """Upsert the status, the pending count and the pending requests (with the tenant).

    ``progress`` (``SmythApprovalProgress``: ``approved/needed`` per pending request
    under a policy) is written only when given: runs without policies make the
    commands they always made. Changed in 0.9.0: ``progress``.
    """
    updates: list[SearchAttributeUpdate[Any]] = [
        STATUS_ATTRIBUTE.value_set("awaiting_approval" if pending else status),
        PENDING_APPROVALS_ATTRIBUTE.value_set(len(pending)),
    ]
    if progress is not None:
        updates.append(
            APPROVAL_PROGRESS_ATTRIBUTE.value_set(list(progress))
            if progress
            else APPROVAL_PROGRESS_ATTRIBUTE.value_unset()
        )
    workflow.upsert_search_attributes(updates)
    workflow.upsert_memo(
        {
            PENDING_APPROVALS_MEMO: {
                "tenant": tenant,
                # Without defaults (status, nulls): a waiting run's worker keeps every
                # memo it wrote for as long as it caches the run.
                "requests": [r.model_dump(mode="json", exclude_defaults=True) for r in pending],
            }
        }
    )
