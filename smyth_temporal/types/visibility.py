"""What agents publish to Temporal's visibility store: search attributes and memo keys.

One definition, read by the agent (which upserts them), the clients (which query by
them), ``smyth dev`` and the testing helpers (which register them on a server).
Visibility is not encrypted: only statuses, counts and approval requests go here.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey

__all__ = [
    "APPROVAL_PROGRESS_ATTRIBUTE",
    "FORK_MEMO",
    "FORK_OF_ATTRIBUTE",
    "PENDING_APPROVALS_ATTRIBUTE",
    "PENDING_APPROVALS_MEMO",
    "SCHEDULE_MEMO",
    "SEARCH_ATTRIBUTES",
    "STATUS_ATTRIBUTE",
    "TENANT_ATTRIBUTE",
    "search_attribute_types",
]

STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("SmythStatus")
"""Search attribute with the agent's status while approvals are involved."""

PENDING_APPROVALS_ATTRIBUTE = SearchAttributeKey.for_int("SmythPendingApprovals")
"""Search attribute with the number of pending approval requests, to find waiting
agents across all runs (``SmythPendingApprovals > 0``)."""

APPROVAL_PROGRESS_ATTRIBUTE = SearchAttributeKey.for_keyword_list("SmythApprovalProgress")
"""Search attribute with the quorum progress of each pending request made under a
policy, as ``approved/needed`` (``"1/2"``): runs waiting for a second approver are
``SmythApprovalProgress = '1/2'``, any that some but not all approvers approved are
``SmythApprovalProgress IN ('1/2', '1/3', '2/3')``. Set only by runs that made such a
request. Added in 0.9.0."""

TENANT_ATTRIBUTE = SearchAttributeKey.for_keyword("SmythTenant")
"""Search attribute with the run's tenant, set by the client that starts it (never by
workflow code), so listings of one tenant's runs are filtered by the server. Added in
0.8.0: runs started before have none and are told apart by their input."""

FORK_OF_ATTRIBUTE = SearchAttributeKey.for_keyword("SmythForkOf")
"""Search attribute with the workflow id a forked run branched off (``AgentClient.fork``),
set by the client that starts the fork: ``SmythForkOf = 'id'`` lists a run's forks.
Added in 0.9.0."""

FORK_MEMO = "smyth_fork_of"
"""Memo key with a fork's ``ForkOrigin`` (parent workflow id, run id, step). Added in 0.9.0."""

PENDING_APPROVALS_MEMO = "smyth_pending_approvals"
"""Memo key under which an agent publishes its pending ``ApprovalRequest``s (with its
tenant), so they can be listed from visibility alone, even while no worker runs."""

SCHEDULE_MEMO = "smyth_schedule"
"""Memo key that marks a Temporal schedule as one of an agent's."""

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[Any], ...] = (
    STATUS_ATTRIBUTE,
    PENDING_APPROVALS_ATTRIBUTE,
    TENANT_ATTRIBUTE,
    APPROVAL_PROGRESS_ATTRIBUTE,
    FORK_OF_ATTRIBUTE,
)
"""The search attributes a cluster must have registered for approvals to be listed."""


def search_attribute_types() -> dict[str, str]:
    """``SEARCH_ATTRIBUTES`` as ``{name: type}`` in the ``temporal`` CLI's spelling."""
    spelling = {
        "KEYWORD": "Keyword",
        "KEYWORD_LIST": "KeywordList",
        "INT": "Int",
        "TEXT": "Text",
        "BOOL": "Bool",
    }
    return {key.name: spelling[key.indexed_value_type.name] for key in SEARCH_ATTRIBUTES}
