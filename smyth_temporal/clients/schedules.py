"""``ScheduleClient``: periodic agents through Temporal Schedules.

A schedule starts a run of an agent every ``every`` (an interval aligned to the Unix
epoch: ``every=1h`` fires on the hour) with the same ``AgentInput``. The schedule
lives on the Temporal server, so it keeps firing with no client running; each run is
an ordinary agent run, with workflow id ``<schedule id>-<scheduled time>``, that any
worker of the agent's task queue takes.

Smyth marks its schedules with a memo (``SCHEDULE_MEMO``), so ``list`` shows only
agent schedules, not every schedule of the namespace.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta

import structlog
from pydantic import BaseModel, Field
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError

from smyth_temporal.clients._base import AgentRef, agent_name, rpc_error
from smyth_temporal.clients._identity import Identity
from smyth_temporal.exceptions import (
    ClientError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    UserError,
)
from smyth_temporal.types.agent import AgentInput
from smyth_temporal.types.visibility import SCHEDULE_MEMO

__all__ = [
    "MIN_INTERVAL",
    "ScheduleClient",
    "ScheduleSummary",
    "ScheduledRun",
    "overlap_name",
]

log = structlog.get_logger("smyth_temporal.schedules")

MIN_INTERVAL = timedelta(seconds=1)
"""The shortest interval Temporal accepts ("interval is too small" below it)."""

_DESCRIBE_CONCURRENCY = 8
"""Schedules ``list`` describes at once."""


def overlap_name(policy: ScheduleOverlapPolicy) -> str:
    """``ScheduleOverlapPolicy.BUFFER_ONE`` as the CLI and ``ScheduleSummary`` write it.

    Returns:
        The name in lower case with dashes: ``skip``, ``buffer-one``, ``allow-all``...

    Added in 0.2.0.
    """
    return policy.name.lower().replace("_", "-")


class ScheduledRun(BaseModel):
    """One run a schedule started.

    Added in 0.2.0.
    """

    workflow_id: str
    """The run's workflow id: ``<schedule id>-<scheduled time>``."""
    run_id: str
    """The first run id of that workflow."""
    scheduled_at: datetime
    """When the schedule meant to start it."""
    started_at: datetime
    """When it was started (later than ``scheduled_at`` for a buffered start)."""


class ScheduleSummary(BaseModel):
    """An agent schedule: what it starts, how often, and what it has done.

    Added in 0.2.0.
    """

    id: str
    """The schedule id."""
    agent: str
    """The agent's workflow type name."""
    every: timedelta
    """The interval between two runs."""
    prompt: str
    """The task every run starts from."""
    tenant: str
    """Whose agent the runs are."""
    task_queue: str
    """Where the runs are started."""
    overlap: str
    """What happens when a run is due while the previous one still runs: ``skip``
    (the default), ``buffer-one``, ``buffer-all``, ``cancel-other``,
    ``terminate-other`` or ``allow-all`` (see ``ScheduleOverlapPolicy``)."""
    paused: bool
    """Whether the schedule is paused (``trigger`` still starts a run)."""
    note: str | None = None
    """The note of the last pause or resume, or the one given at creation."""
    created_at: datetime
    """When the schedule was created."""
    next_runs: list[datetime] = Field(default_factory=list)
    """The next times a run is due (none while paused)."""
    recent_runs: list[ScheduledRun] = Field(default_factory=list)
    """The most recent runs started (up to 10), oldest first."""
    running: list[str] = Field(default_factory=list)
    """Workflow ids of the runs still running (not tracked with ``allow-all``)."""
    runs: int = 0
    """How many runs the schedule has started."""
    skipped_overlap: int = 0
    """How many runs were skipped because the previous one still ran."""


class ScheduleClient:
    """Create, list, pause, resume, trigger and delete periodic agent runs.

    Get one from ``AgentClient.schedules``:

    ```python
    agents = await AgentClient.connect()
    schedule_id = await agents.schedules.create(
        MarketAnalyst, every=timedelta(hours=1), prompt="Summarize the market."
    )
    await agents.schedules.pause(schedule_id, note="holiday")
    ```

    ``pause``, ``resume``, ``trigger`` and ``delete`` work on any schedule id of the
    namespace; ``describe`` and ``list`` only on agent schedules.

    Added in 0.2.0.
    """

    def __init__(
        self, client: Client, *, task_queue: str, identity: Identity | None = None
    ) -> None:
        """Manage the schedules of ``client``'s namespace.

        Args:
            client: The Temporal client (with ``SmythPlugin`` or the pydantic converter).
            task_queue: Where scheduled runs are started unless ``create`` says otherwise.
            identity: With an API key's principal: its tenant's agent schedules only
                (another tenant's look like ones that do not exist), creating and
                changing them needs the operator role. Added in 0.4.0.
        """
        self.client = client
        self.task_queue = task_queue
        self.identity = identity if identity is not None else Identity(client, None)

    async def create(
        self,
        agent: AgentRef,
        *,
        every: timedelta,
        prompt: str,
        id: str | None = None,
        tenant: str = "default",
        overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP,
        paused: bool = False,
        note: str | None = None,
        task_queue: str | None = None,
        execution_timeout: timedelta | None = None,
    ) -> str:
        """Start ``agent`` with ``prompt`` every ``every``.

        Args:
            agent: The agent class or its workflow type name.
            every: The interval, at least one second. Runs are due at multiples of it
                since the Unix epoch, so ``every=timedelta(hours=1)`` fires on the hour;
                use ``trigger`` for a run now.
            prompt: The task every run starts from.
            id: The schedule id (default: ``<agent>-schedule-<random>``); it also
                prefixes the runs' workflow ids.
            tenant: Whose agent the runs are (``AgentInput.tenant``).
            overlap: What to do when a run is due while the previous one still runs;
                by default it is skipped (the next due time after the run ends counts).
            paused: Create the schedule paused (``resume`` starts it).
            note: Why the schedule exists or is paused; shown by ``describe``.
            task_queue: Override the client's task queue.
            execution_timeout: Bound each run, so a stuck run cannot hold back the
                following ones forever (default: none).

        Returns:
            The schedule id.

        Raises:
            UserError: ``every`` is shorter than a second or ``prompt`` is empty.
            UnknownAgentError: ``agent`` is a class without ``@workflow.defn``.
            ScheduleExistsError: A schedule has that id already.
            AccessDeniedError: The principal may not start runs, or ``tenant`` is not its.
        """
        self.identity.permit("operate")
        tenant = self.identity.tenant(tenant)
        if every < MIN_INTERVAL:
            raise UserError(f"a schedule's interval must be at least 1 second, got {every}")
        if not prompt.strip():
            raise UserError("a schedule's prompt must not be empty")
        name = agent_name(agent)
        schedule_id = id or f"{name}-schedule-{uuid.uuid4().hex[:8]}"
        queue = task_queue or self.task_queue
        schedule = Schedule(
            action=ScheduleActionStartWorkflow(
                name,
                AgentInput(prompt=prompt, tenant=tenant),
                id=schedule_id,
                task_queue=queue,
                execution_timeout=execution_timeout,
            ),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
            policy=SchedulePolicy(overlap=overlap),
            state=ScheduleState(paused=paused, note=note),
        )
        try:
            await self.client.create_schedule(
                schedule_id, schedule, memo={SCHEDULE_MEMO: {"agent": name, "tenant": tenant}}
            )
        except ScheduleAlreadyRunningError as exc:
            raise ScheduleExistsError(f"a schedule with id {schedule_id!r} exists already") from exc
        except RPCError as exc:
            raise _translate(exc, schedule_id) from exc
        log.info(
            "schedule.created",
            schedule_id=schedule_id,
            agent=name,
            every_seconds=every.total_seconds(),
            tenant=tenant,
            task_queue=queue,
            overlap=overlap_name(overlap),
            paused=paused,
        )
        return schedule_id

    async def describe(self, id: str) -> ScheduleSummary:
        """An agent schedule, with its recent and next runs.

        Raises:
            ScheduleNotFoundError: No schedule has that id.
            ClientError: The schedule is not an agent schedule made by smyth.
        """
        self.identity.permit("read")
        try:
            description = await self._handle(id).describe()
        except RPCError as exc:
            raise _translate(exc, id) from exc
        memo = await description.memo()
        if SCHEDULE_MEMO not in memo:
            raise ClientError(f"schedule {id!r} is not an agent schedule made by smyth")
        summary = await self._summary(description)
        principal = self.identity.principal
        if principal is not None and summary.tenant != principal.tenant:
            raise _not_found(id)
        return summary

    async def list(
        self, *, tenant: str | None = None, agent: AgentRef | None = None
    ) -> list[ScheduleSummary]:
        """The agent schedules of the namespace, by id.

        Schedules made without smyth are left out. Temporal lists schedules from its
        visibility store, which may lag: one created or deleted a moment ago may be
        missing, or still shown, for a while (the dev server has no such lag).

        Args:
            tenant: Only this tenant's schedules.
            agent: Only this agent's schedules (a class or a workflow type name).
        """
        self.identity.permit("read")
        if self.identity.principal is not None:
            tenant = self.identity.tenant(tenant)
        wanted_agent = agent_name(agent) if agent is not None else None
        ids: list[str] = []
        async for entry in await self.client.list_schedules():
            marker = (await entry.memo()).get(SCHEDULE_MEMO)
            if not isinstance(marker, Mapping):
                continue
            if tenant is not None and marker.get("tenant") != tenant:
                continue
            if wanted_agent is not None and marker.get("agent") != wanted_agent:
                continue
            ids.append(entry.id)
        limit = asyncio.Semaphore(_DESCRIBE_CONCURRENCY)

        async def describe(schedule_id: str) -> ScheduleSummary | None:
            async with limit:
                try:
                    return await self.describe(schedule_id)
                except ScheduleNotFoundError:
                    return None  # deleted since it was listed

        found = await asyncio.gather(*(describe(i) for i in sorted(set(ids))))
        return [summary for summary in found if summary is not None]

    async def pause(self, id: str, *, note: str | None = None) -> None:
        """Stop starting runs until ``resume``; a run in progress goes on.

        Raises:
            ScheduleNotFoundError: No schedule has that id.
        """
        await self._owned(id)
        try:
            await self._handle(id).pause(note=note or "paused with smyth")
        except RPCError as exc:
            raise _translate(exc, id) from exc
        log.info("schedule.paused", schedule_id=id, note=note)

    async def resume(self, id: str, *, note: str | None = None) -> None:
        """Start runs again at the next due time (missed ones are not made up).

        Raises:
            ScheduleNotFoundError: No schedule has that id.
        """
        await self._owned(id)
        try:
            await self._handle(id).unpause(note=note or "resumed with smyth")
        except RPCError as exc:
            raise _translate(exc, id) from exc
        log.info("schedule.resumed", schedule_id=id, note=note)

    async def trigger(self, id: str, *, overlap: ScheduleOverlapPolicy | None = None) -> None:
        """Start a run now, paused or not.

        Args:
            id: The schedule id.
            overlap: Override the schedule's overlap policy for this run. By default
                the schedule's applies: with ``SKIP``, nothing starts while a run is
                in progress (``skipped_overlap`` counts it). With ``ALLOW_ALL`` the
                schedule does not track the run, so later runs do not wait for it;
                and as a run's workflow id ends with its due time to the second, a
                run triggered in the same second as one still running cannot start
                (the server logs "already running").

        Raises:
            ScheduleNotFoundError: No schedule has that id.
        """
        await self._owned(id)
        try:
            await self._handle(id).trigger(overlap=overlap)
        except RPCError as exc:
            raise _translate(exc, id) from exc
        log.info(
            "schedule.triggered",
            schedule_id=id,
            overlap=overlap_name(overlap) if overlap is not None else None,
        )

    async def delete(self, id: str) -> None:
        """Delete the schedule; runs it started go on.

        Raises:
            ScheduleNotFoundError: No schedule has that id.
        """
        await self._owned(id)
        try:
            await self._handle(id).delete()
        except RPCError as exc:
            raise _translate(exc, id) from exc
        log.info("schedule.deleted", schedule_id=id)

    async def _owned(self, id: str) -> None:
        """Under a principal: an operator's, and an agent schedule of its tenant.

        Raises:
            AccessDeniedError: The role may not change schedules.
            ScheduleNotFoundError: No schedule of the principal's tenant has that id.
        """
        principal = self.identity.principal
        if principal is None:
            return
        self.identity.permit("operate")
        try:
            description = await self._handle(id).describe()
        except RPCError as exc:
            raise _translate(exc, id) from exc
        marker = (await description.memo()).get(SCHEDULE_MEMO)
        if not isinstance(marker, Mapping) or marker.get("tenant") != principal.tenant:
            raise _not_found(id)

    def _handle(self, id: str) -> ScheduleHandle:
        return self.client.get_schedule_handle(id)

    async def _summary(self, description: ScheduleDescription) -> ScheduleSummary:
        schedule = description.schedule
        action = schedule.action
        if not isinstance(action, ScheduleActionStartWorkflow) or not action.args:
            raise ClientError(f"schedule {description.id!r} does not start an agent run")
        try:  # described schedules carry the raw payloads of their arguments
            (agent_input,) = await self.client.data_converter.decode([action.args[0]], [AgentInput])
        except (ValueError, RuntimeError) as exc:
            raise ClientError(
                f"schedule {description.id!r} does not start an agent run: {exc}"
            ) from exc
        intervals = schedule.spec.intervals
        info = description.info
        return ScheduleSummary(
            id=description.id,
            agent=action.workflow,
            every=intervals[0].every if intervals else timedelta(0),
            prompt=agent_input.prompt,
            tenant=agent_input.tenant,
            task_queue=action.task_queue,
            overlap=overlap_name(schedule.policy.overlap),
            paused=schedule.state.paused,
            note=schedule.state.note,
            created_at=info.created_at,
            next_runs=list(info.next_action_times),
            recent_runs=[
                ScheduledRun(
                    workflow_id=result.action.workflow_id,
                    run_id=result.action.first_execution_run_id,
                    scheduled_at=result.scheduled_at,
                    started_at=result.started_at,
                )
                for result in info.recent_actions
                if isinstance(result.action, ScheduleActionExecutionStartWorkflow)
            ],
            running=[
                running.workflow_id
                for running in info.running_actions
                if isinstance(running, ScheduleActionExecutionStartWorkflow)
            ],
            runs=info.num_actions,
            skipped_overlap=info.num_actions_skipped_overlap,
        )


def _not_found(schedule_id: str) -> ScheduleNotFoundError:
    return ScheduleNotFoundError(f"no schedule with id {schedule_id!r}")


def _translate(exc: RPCError, schedule_id: str) -> Exception:
    return rpc_error(exc, not_found=_not_found(schedule_id))
