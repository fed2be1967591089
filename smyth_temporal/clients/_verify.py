"""Verify a deploy: replay recent agent runs from the server against the local code.

``verify_deploy`` lists the runs of some agent types (those started within a window,
and every one still open), downloads each history and replays it with temporalio's
``Replayer`` against the agent classes given, the way a worker with this code would
replay them after the deploy. A run whose history the code cannot reproduce is a
``ReplayMismatch``: its workflow id and the first nondeterministic step, in words.

Run it in CI before promoting a build (``smyth verify-deploy``).

Added in 0.5.0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog
from temporalio.client import Client, WorkflowExecution, WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer

from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.clients._base import agent_name
from smyth_temporal.clients._nondeterminism import describe_replay_failure
from smyth_temporal.clients._visibility import executions
from smyth_temporal.exceptions import UnknownAgentError
from smyth_temporal.plugin import SmythPlugin

__all__ = ["DEFAULT_SINCE", "ReplayMismatch", "VerifyReport", "runs_query", "verify_deploy"]

log = structlog.get_logger("smyth_temporal.verify")

DEFAULT_SINCE = timedelta(hours=24)
"""How far back ``verify_deploy`` looks for closed runs by default."""

_ERRORS_ONLY = TelemetryFilter(core_level="ERROR", other_level="ERROR")


@dataclass(frozen=True)
class ReplayMismatch:
    """A run whose history today's code does not reproduce.

    Added in 0.5.0.
    """

    workflow_id: str
    """The run's workflow id."""
    run_id: str
    """The run's id."""
    agent: str
    """Its workflow type."""
    reason: str
    """The first nondeterministic step, in words (see ``describe_replay_failure``)."""


@dataclass
class VerifyReport:
    """What ``verify_deploy`` replayed and what failed.

    Added in 0.5.0.
    """

    checked: int = 0
    """Histories replayed."""
    mismatches: list[ReplayMismatch] = field(default_factory=list)
    """The runs that failed to replay, in the order they were checked."""

    @property
    def ok(self) -> bool:
        """Whether every history replayed."""
        return not self.mismatches


def runs_query(types: Sequence[str], since: datetime) -> str:
    """The visibility query for runs of ``types`` started after ``since``, or still open."""
    names = ", ".join(f"'{name}'" for name in types)
    start = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"WorkflowType IN ({names}) AND (StartTime > '{start}' OR ExecutionStatus = 'Running')"


async def verify_deploy(
    client: Client,
    agents: Sequence[type[AgentWorkflow]],
    *,
    since: timedelta = DEFAULT_SINCE,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Replay the recent runs of ``agents``' types against these classes.

    Args:
        client: A client of the namespace the runs live in.
        agents: The agent classes as they will be deployed.
        since: Check runs started this long ago or later, and every open run.
        limit: At most this many runs (the most recent first; ``None``: all).
        progress: Called with (replayed, total) after each run.

    Returns:
        How many histories were replayed, and the ones that did not replay.

    Raises:
        UnknownAgentError: No agent class was given.

    Added in 0.5.0.
    """
    if not agents:
        raise UnknownAgentError("no agent to verify; name one as module:Class")
    types = [agent_name(agent) for agent in agents]
    query = runs_query(types, datetime.now(UTC) - since)
    runs = [run async for run in executions(client, query, limit=limit)]
    log.info("verify.listed", agents=types, runs=len(runs), since=str(since))
    report = VerifyReport()
    if not runs:
        return report
    replayer = Replayer(workflows=list(agents), plugins=[SmythPlugin()], runtime=_quiet_runtime())
    async with replayer.workflow_replay_iterator(_histories(client, runs)) as results:
        async for result in results:
            # Results come in the order of the histories, so of ``runs``.
            run = runs[report.checked]
            report.checked += 1
            if result.replay_failure is not None:
                reason = describe_replay_failure(result.replay_failure, result.history)
                report.mismatches.append(
                    ReplayMismatch(run.id, run.run_id, run.workflow_type, reason)
                )
                log.info("verify.mismatch", workflow_id=run.id, reason=reason)
            if progress is not None:
                progress(report.checked, len(runs))
    return report


def _quiet_runtime() -> Runtime:
    # Core logs every replay failure as a warning on stdout; here they are the result,
    # reported once, in words.
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=_ERRORS_ONLY)))


async def _histories(
    client: Client, runs: Sequence[WorkflowExecution]
) -> AsyncIterator[WorkflowHistory]:
    for run in runs:
        yield await client.get_workflow_handle(run.id, run_id=run.run_id).fetch_history()
