"""A run's lineage: the runs forked from it (visibility) and its rewinds (history).

Forks are found by the ``SmythForkOf`` search attribute their client set when it
started them, narrowed to the parent's tenant: by the server (``SmythTenant``) and
again here, so a run of another tenant that happens to name the same parent (a
workflow id used again after the first run closed) is never listed. Rewinds are read
from the run's own history: each rewind resets the run (a workflow task failed with
cause ``RESET_WORKFLOW`` names the abandoned run and the new one) and signals it a
``RewindNotice`` (``REWIND_SIGNAL``).

Added in 0.10.0.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import structlog
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.clients._tenancy import TenantResolver
from smyth_temporal.clients._visibility import execution_page, is_paused_execution
from smyth_temporal.types.agent import ForkOrigin
from smyth_temporal.types.lineage import ForkRef, RewindRecord
from smyth_temporal.types.rewind import REWIND_SIGNAL, RewindNotice
from smyth_temporal.types.visibility import FORK_MEMO, FORK_OF_ATTRIBUTE, TENANT_ATTRIBUTE

__all__ = [
    "FORKS_LISTED",
    "RewindPairing",
    "forks_of",
    "reset_runs",
    "rewind_notice",
    "rewinds_of",
]

log = structlog.get_logger("smyth_temporal.lineage")

FORKS_LISTED = 100
"""At most this many forks of one run are listed: the most recent ones the server lists
first, shown oldest first."""

_PAGE = 100

# A workflow id is spliced into the visibility query only when nothing in it could
# end the quoted string (no quotes, backslashes or control characters).
_QUOTABLE = re.compile(r"[^'\"\\\x00-\x1f\x7f]{1,1000}")


def reset_runs(event: HistoryEvent) -> tuple[str, str] | None:
    """``(abandoned run id, new run id)`` if ``event`` is where a reset took a run over."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
        return None
    failed = event.workflow_task_failed_event_attributes
    if failed.cause != WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW:
        return None
    return failed.base_run_id, failed.new_run_id


async def rewind_notice(client: Client, event: HistoryEvent) -> RewindNotice | None:
    """The ``RewindNotice`` ``event`` delivers, if it is a rewind's signal and readable."""
    if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        return None
    signaled = event.workflow_execution_signaled_event_attributes
    if signaled.signal_name != REWIND_SIGNAL or not signaled.input.payloads:
        return None
    try:
        [notice] = await client.data_converter.decode([signaled.input.payloads[0]], [RewindNotice])
    except Exception as exc:  # a payload this client cannot decrypt: leave it out
        log.info("lineage.notice_unreadable", error=type(exc).__name__)
        return None
    return notice if isinstance(notice, RewindNotice) else None


async def rewinds_of(client: Client, workflow_id: str) -> list[RewindRecord]:
    """The rewinds the current run of ``workflow_id`` went through, oldest first.

    One per abandoned run, and only a notice that follows the reset of the run it
    names (as ``AgentClient.rewind`` sends it): a signal of that name sent by other
    means is no rewind, and a notice Temporal applied again after a later reset is
    counted once. A run never reset (the server keeps its last reset time) is answered
    from a describe, without reading its history.
    """
    handle = client.get_workflow_handle(workflow_id)
    description = await handle.describe()
    if not description.raw_description.workflow_extended_info.HasField("last_reset_time"):
        return []
    pairing = RewindPairing()
    async for event in handle.fetch_history_events():
        reset = reset_runs(event)
        if reset is not None:
            pairing.reset(*reset)
        elif (notice := await rewind_notice(client, event)) is not None:
            pairing.notice(event.event_time.ToDatetime(tzinfo=UTC), notice)
    return pairing.records


class RewindPairing:
    """A history's resets paired with the rewind notices that follow them (pure).

    Fed the history's resets and notices in order: a notice counts when a reset of the
    run it names came before it, once per abandoned run (the first such notice).

    Added in 0.10.0.
    """

    def __init__(self) -> None:
        self._created: dict[str, str] = {}  # abandoned run -> the run its reset created
        self._records: dict[str, RewindRecord] = {}

    def reset(self, abandoned_run_id: str, new_run_id: str) -> None:
        """A reset of ``abandoned_run_id`` created ``new_run_id``."""
        self._created[abandoned_run_id] = new_run_id

    def notice(self, time: datetime, notice: RewindNotice) -> bool:
        """A notice signalled at ``time``; whether it counts as a rewind."""
        abandoned = notice.abandoned_run_id
        if abandoned in self._records:
            return False  # applied again after a later reset: counted once
        if abandoned not in self._created:
            log.warning("lineage.notice_without_reset", abandoned_run_id=abandoned)
            return False
        self._records[abandoned] = RewindRecord(
            time=time,
            to_step=notice.to_step,
            abandoned_run_id=abandoned,
            run_id=self._created[abandoned],
            by=notice.by,
            side_effects=list(notice.side_effects),
            voided_approvals=list(notice.voided_approvals),
        )
        return True

    @property
    def records(self) -> list[RewindRecord]:
        """The rewinds, in the order of their notices."""
        return list(self._records.values())


async def forks_of(
    client: Client, workflow_id: str, tenant: str, *, tenancy: TenantResolver
) -> list[ForkRef]:
    """The runs forked from ``workflow_id`` that belong to ``tenant``, oldest first.

    A namespace without ``SmythForkOf`` (set up before forks, or the time-skipping
    test server) has no listed forks: the answer is empty, and it is logged.

    Args:
        client: A client of the namespace.
        workflow_id: The parent.
        tenant: The parent's tenant; a fork is always its parent's tenant's.
        tenancy: Reads the tenant of a listed run that has no ``SmythTenant``.
    """
    if not _QUOTABLE.fullmatch(workflow_id):
        log.info("lineage.forks_unlisted", workflow_id=workflow_id, reason="unquotable id")
        return []
    query = f"{FORK_OF_ATTRIBUTE.name} = '{workflow_id}'"
    found: dict[str, list[WorkflowExecution]] = {}
    token = b""
    try:
        while len(found) < FORKS_LISTED:
            page, token = await execution_page(
                client, query, tenant=tenant, page_size=_PAGE, token=token
            )
            for execution in page:
                found.setdefault(execution.id, []).append(execution)
            if not token:
                break
    except RPCError as exc:
        unknown = FORK_OF_ATTRIBUTE.name in exc.message and "not defined" in exc.message
        if not unknown and exc.status != RPCStatusCode.UNIMPLEMENTED:
            raise
        log.info("lineage.forks_unlisted", workflow_id=workflow_id, reason=exc.message)
        return []
    forks = []
    for runs in found.values():
        fork = await _fork(client, workflow_id, tenant, runs, tenancy)
        if fork is not None:
            forks.append(fork)
    forks.sort(key=lambda f: (f.started_at or datetime.min, f.workflow_id))
    return forks[:FORKS_LISTED]


async def _fork(
    client: Client,
    parent: str,
    tenant: str,
    runs: list[WorkflowExecution],
    tenancy: TenantResolver,
) -> ForkRef | None:
    """The fork whose runs (its continue-as-new chain, as listed) are ``runs``."""
    runs.sort(key=lambda run: run.start_time)
    first, latest = runs[0], runs[-1]
    owner = first.typed_search_attributes.get(TENANT_ATTRIBUTE)
    if owner is None:  # started without the attribute: its input says whose it is
        chain = first.raw_info.first_run_id or first.run_id
        owner = await tenancy.chain_tenant(first.id, first.run_id, chain)
    if owner != tenant:
        return None
    origin: ForkOrigin | None = None
    try:
        memo = await first.memo()
        origin = ForkOrigin.model_validate(memo[FORK_MEMO])
    except Exception as exc:  # no memo, or one this client cannot read: the fork is still one
        log.info("lineage.fork_memo_unreadable", workflow_id=first.id, error=type(exc).__name__)
    if origin is not None and origin.workflow_id != parent:
        return None
    status = "paused" if is_paused_execution(latest) else _status(latest)
    return ForkRef(
        workflow_id=first.id,
        run_id=first.run_id,
        step=origin.step if origin is not None else None,
        parent_run_id=origin.run_id if origin is not None else None,
        status=status,
        started_at=first.start_time,
    )


def _status(execution: WorkflowExecution) -> str:
    return execution.status.name.lower() if execution.status is not None else "unknown"
