"""``AgentClient``: start agents, look at them, wait for them, decide their approvals."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, Final

from pydantic import TypeAdapter
from temporalio.client import (
    Plugin,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.common import TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.service import RPCError

from smyth_temporal._names import PROBE_ID_PREFIX
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.clients._approvals import ApprovalsClient, PendingApproval, ended_refusal
from smyth_temporal.clients._audit import read_audit
from smyth_temporal.clients._base import (
    PICKUP_TIMEOUT,
    AgentRef,
    agent_name,
    connect_client,
    is_unregistered,
    pollers,
    resolve_settings,
    terminate_quietly,
    watch_pickup,
)
from smyth_temporal.clients._budgets import BudgetClient
from smyth_temporal.clients._fork import fork_point, start_fork
from smyth_temporal.clients._identity import principal_from_env
from smyth_temporal.clients._limits import LimitsClient
from smyth_temporal.clients._lineage import forks_of, rewinds_of
from smyth_temporal.clients._pause import PauseClient, is_paused
from smyth_temporal.clients._rewind import RewindClient
from smyth_temporal.clients._runs import translate
from smyth_temporal.clients._sessions import SessionsClient
from smyth_temporal.clients._visibility import start_tagged
from smyth_temporal.clients.memory import MemoryClient
from smyth_temporal.clients.schedules import ScheduleClient
from smyth_temporal.exceptions import (
    AgentFailedError,
    AgentPausedError,
    ClientError,
    InvalidDecisionError,
    UnknownAgentError,
)
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.security import Principal
from smyth_temporal.settings import Settings
from smyth_temporal.types.agent import TERMINAL_STATUSES, AgentInput, AgentResult, AgentState
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.audit import AuditTrail
from smyth_temporal.types.sessions import session_workflow_id

__all__ = ["PROGRESS_INTERVAL", "AgentClient", "PendingApproval"]

STATE_QUERY = "state"

PROGRESS_INTERVAL = 0.5
"""Seconds between two ``state`` queries while ``result`` reports progress."""

_PROGRESS_QUERY_TIMEOUT = 5.0
_PROBE_LIFETIME = timedelta(minutes=1)
_WORKER_POLL_INTERVAL = 0.05

Note = Callable[[str], None]
"""Receives a line worth showing a person (``warning: ...``, ``note: ...``)."""


class _FromEnv(enum.Enum):
    """``principal`` not given: read ``SMYTH_API_KEY``."""

    FROM_ENV = enum.auto()


_FROM_ENV: Final = _FromEnv.FROM_ENV


class AgentClient(ApprovalsClient, SessionsClient, PauseClient, RewindClient):
    """Starts agents, queries their state and awaits their results.

    ```python
    agents = await AgentClient.connect("localhost:7233")
    handle = await agents.start(MarketAnalyst, AgentInput(prompt="How is ACME doing?"))
    result = await agents.result(handle.id)
    ```

    Added in 0.1.0.
    """

    @classmethod
    async def connect(
        cls,
        target: str | Settings | None = None,
        *,
        namespace: str | None = None,
        task_queue: str | None = None,
        tls: bool | None = None,
        api_key: str | None = None,
        plugins: Sequence[Plugin] = (),
        principal: Principal | _FromEnv | None = _FROM_ENV,
    ) -> AgentClient:
        """Connect to Temporal, like ``temporalio.client.Client.connect``.

        Args:
            target: ``host:port`` of the frontend, or ``Settings``; default: from the
                environment (``TEMPORAL_ADDRESS``, the ``temporal.toml`` profile, or
                ``localhost:7233``). What an address leaves out comes from there too.
            namespace: The Temporal namespace.
            task_queue: Where agents are started.
            tls: Connect with TLS (``True``), overriding the profile.
            api_key: The API key (Temporal Cloud), overriding the profile.
            plugins: More client plugins, after ``SmythPlugin``.
            principal: Act for this API key's principal only (see ``Identity``).
                Default: the key in ``SMYTH_API_KEY``, looked up in the key file
                (``SMYTH_KEYS_FILE``), if set; ``None``: trusted, no checks.

        Raises:
            ServerUnavailableError: Nothing answers at the address.
            ConfigurationError: The address is not ``host:port``.

        Changed in 0.3.0: takes an address, ``namespace``, ``tls`` and ``api_key``.
        Changed in 0.4.0: ``principal``, from ``SMYTH_API_KEY`` by default.
        """
        caller = principal_from_env() if isinstance(principal, _FromEnv) else principal
        settings = resolve_settings(
            target, namespace=namespace, task_queue=task_queue, tls=tls, api_key=api_key
        )
        # The payload store and encryption from the same settings as the connection.
        client = await connect_client(settings, plugins=[SmythPlugin(settings=settings), *plugins])
        return cls(client, task_queue=settings.task_queue, principal=caller)

    @property
    def memory(self) -> MemoryClient:
        """Search, list, forget and undo runs in long-term memory."""
        return MemoryClient(self.client, task_queue=self.task_queue, identity=self.identity)

    @property
    def budgets(self) -> BudgetClient:
        """Tenants' daily and monthly budgets for model calls.

        Added in 0.5.0.
        """
        return BudgetClient(self.client, task_queue=self.task_queue, identity=self.identity)

    @property
    def limits(self) -> LimitsClient:
        """Fleet-wide rate limits and tenant weights for agents' model calls.

        Added in 0.5.0.
        """
        return LimitsClient(self.client, task_queue=self.task_queue, identity=self.identity)

    @property
    def schedules(self) -> ScheduleClient:
        """Create, list, pause, resume, trigger and delete periodic agent runs.

        Added in 0.2.0.
        """
        return ScheduleClient(self.client, task_queue=self.task_queue, identity=self.identity)

    async def start(
        self,
        agent: AgentRef,
        input: AgentInput | str,
        *,
        id: str | None = None,
        task_queue: str | None = None,
        execution_timeout: timedelta | None = None,
        id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    ) -> WorkflowHandle[Any, AgentResult]:
        """Start an agent run.

        Args:
            agent: The agent class or its workflow type name.
            input: The task (a plain string becomes ``AgentInput(prompt=...)``).
            id: The workflow id (default: ``<agent>-<random>``). Starting a second
                run with the id of a running one fails.
            task_queue: Override the client's task queue.
            execution_timeout: Bound the whole run (default: none, agents may run for weeks).
            id_reuse_policy: Whether an id used by a finished run may start another;
                ``REJECT_DUPLICATE`` refuses any id ever used (still held by the server)
                with ``WorkflowAlreadyStartedError``: an idempotent start in one call.

        Returns:
            The Temporal workflow handle.

        Raises:
            WorkflowAlreadyStartedError: The id names a running run, or (by
                ``id_reuse_policy``) one that ran.

        Changed in 0.8.0: the run carries its tenant as the ``SmythTenant`` search
        attribute (where the namespace has it). Changed in 0.9.0: ``id_reuse_policy``;
        the client remembers the new run's tenant (its next ownership check reads no
        history).
        """
        self.identity.permit("operate")
        name = agent_name(agent)
        if isinstance(input, str):
            input = AgentInput(prompt=input)
        tenant = self.identity.tenant(input.tenant)
        if tenant != input.tenant:
            input = input.model_copy(update={"tenant": tenant})
        started_by = self.identity.by(input.started_by)
        if started_by != input.started_by:
            input = input.model_copy(update={"started_by": started_by})
        workflow_id = id or f"{name}-{uuid.uuid4().hex[:12]}"
        queue = task_queue or self.task_queue

        def start(tags: TypedSearchAttributes) -> Awaitable[WorkflowHandle[Any, AgentResult]]:
            return self.client.start_workflow(
                name,
                input,
                id=workflow_id,
                task_queue=queue,
                result_type=AgentResult,
                execution_timeout=execution_timeout,
                id_reuse_policy=id_reuse_policy,
                search_attributes=tags,
            )

        handle = await start_tagged(self.client, input.tenant, start)
        # A start that conflicts fails (the default conflict policy), so this run began a
        # chain of its own: its tenant is the input's, known without asking the server.
        if handle.result_run_id:
            self.identity.tenancy.started(workflow_id, handle.result_run_id, input.tenant)
        return handle

    async def run(self, agent: AgentRef, input: AgentInput | str, **options: Any) -> AgentResult:
        """Start an agent run and wait for its result (see ``start`` for the options).

        Given an agent class with an ``output_type``, ``data`` is an instance of it.
        """
        handle = await self.start(agent, input, **options)
        output_type = None if isinstance(agent, str) else agent.config.output_type
        return await self.result(handle.id, output_type=output_type)

    async def fork(
        self,
        workflow_id: str,
        *,
        at_step: int,
        prompt: str | None = None,
        model: str | None = None,
        id: str | None = None,
        session_id: str | None = None,
        agent: type[AgentWorkflow] | None = None,
        task_queue: str | None = None,
        replay_model_turns: bool | None = None,
    ) -> WorkflowHandle[Any, AgentResult]:
        """Start a new run from ``workflow_id``'s state right after step ``at_step``.

        The fork carries the original's conversation, ``data``, usage, decided approvals
        and versions up to that step (read from its history, see ``clients._fork``);
        no model is called for those steps and the original is untouched. The fork
        records its parent in ``AgentInput.fork_of``, its memo and ``SmythForkOf``.
        It reads the memories the original had written up to the step and writes to
        its own branch, which the original never sees.

        With ``replay_model_turns`` the fork's worker answers each turn whose request
        equals one the original recorded (after the step) with the recorded response,
        read from the original's history: the model is paid only from the first turn
        whose conversation differs (a changed tool, prompt or model). Replayed turns
        say so (``ModelResponse.replayed``) and cost nothing in the fork's usage.

        Args:
            workflow_id: The run to fork (any run of its chain may hold the step).
            at_step: The step to fork after (0: before the first model turn).
            prompt: Added as a user message before the fork's first turn.
            model: Run the fork's turns on this model.
            id: The fork's workflow id (default: ``<workflow_id>-fork-<random>``).
            session_id: Fork a session into this session of the same agent and tenant
                (``send`` reaches it by this id); instead of ``id``.
            agent: The agent's class, to replay its history (default: the imported
                class of the run's workflow type).
            task_queue: Override the client's task queue.
            replay_model_turns: Answer matching turns from the original's record
                (default: when neither ``prompt`` nor ``model`` is given, as either
                makes every later request differ).

        Raises:
            AgentNotFoundError: No run (of the caller's tenant) has that id.
            ForkError: The run has not taken that step, or is in the middle of it.
            UnknownAgentError: The agent's class is not imported here.

        Added in 0.9.0. Changed in 0.10.0: ``replay_model_turns``.
        """
        if id is not None and session_id is not None:
            raise ValueError("give the fork an id or a session_id, not both")
        await self.identity.owns(workflow_id, "operate")
        point = await fork_point(self.client, workflow_id, at_step, agent=agent)
        tenant = self.identity.tenant(point.input.tenant)
        if replay_model_turns is None:
            replay_model_turns = not prompt and not model
        update = {
            "tenant": tenant,
            "started_by": self.identity.by(None),
            "replay_model_turns": replay_model_turns,
        }
        if model:
            update["model"] = model
        if session_id is not None:
            update["session_id"] = session_id
            id = session_workflow_id(point.agent, tenant, session_id)
        input = point.input.model_copy(update=update)
        return await start_fork(
            self.client,
            point,
            input,
            id=id,
            task_queue=task_queue or self.task_queue,
            prompt=prompt,
            start_tagged=lambda start: start_tagged(self.client, tenant, start),
        )

    async def confirm_pickup(
        self,
        workflow_id: str,
        agent: AgentRef,
        *,
        task_queue: str | None = None,
        timeout: float = PICKUP_TIMEOUT,
        note: Note | None = None,
    ) -> bool:
        """Check that a worker serves a run just started: it takes its first workflow task.

        A worker that polls the queue but lacks the agent's class fails the task with
        "not registered", and Temporal would retry it forever: the run is terminated
        and the error says which worker to start. A failing or slow worker only earns
        a ``note``.

        Args:
            workflow_id: The new run's workflow id.
            agent: The agent class or its workflow type name (for the messages).
            task_queue: The queue it was started on (default: the client's).
            timeout: Seconds to watch.
            note: Receives a line about a failed task or a run nobody took yet.

        Returns:
            Whether a worker took the run within ``timeout``.

        Raises:
            UnknownAgentError: No worker on the queue has the agent.

        Added in 0.3.0.
        """
        name, queue = agent_name(agent), task_queue or self.task_queue
        warned: list[str] = []

        def failed(message: str) -> None:
            if note is not None and not warned and not is_unregistered(message):
                warned.append(message)
                note(f"warning: a workflow task of {workflow_id} failed: {message}")

        handle = self.client.get_workflow_handle(workflow_id)
        pickup = await watch_pickup(handle, timeout=timeout, on_failure=failed)
        if pickup.unregistered:
            reason = f"no worker serves agent {name!r} on task queue {queue!r}"
            await terminate_quietly(handle, reason)
            raise UnknownAgentError(
                f"{reason}; start one with `smyth worker module:{name}` "
                f"(run {workflow_id} was terminated)"
            )
        if not pickup.taken and note is not None:
            note(f"note: no worker has taken {workflow_id} yet; it starts when one does")
        return pickup.taken

    async def check_served(
        self, agent: AgentRef, *, task_queue: str | None = None, timeout: float = PICKUP_TIMEOUT
    ) -> bool | None:
        """Whether a worker on the queue has ``agent``, asked without running it.

        The mechanism of ``confirm_pickup``, on a probe: a run of the agent's type
        (``smyth-probe-<agent>-<random>``) started without input. A worker that lacks
        the type fails its first task as "not registered"; an agent worker that has it
        ends the run in its first task before any agent code runs (``SmythPlugin``'s
        probe guard; a worker without the plugin fails the task on the missing input).
        The probe is terminated either way.

        Args:
            agent: The agent class or its workflow type name.
            task_queue: The queue (default: the client's).
            timeout: Seconds to wait for a worker to take the probe.

        Returns:
            ``True``: a worker has the agent; ``False``: the worker that took the probe
            has not; ``None``: no worker took it within ``timeout``.

        Added in 0.8.0.
        """
        self.identity.permit("operate")
        name = agent_name(agent)
        handle = await self.client.start_workflow(
            name,
            id=f"{PROBE_ID_PREFIX}{name}-{uuid.uuid4().hex[:12]}",
            task_queue=task_queue or self.task_queue,
            execution_timeout=_PROBE_LIFETIME,  # gone even if the terminate is lost
        )
        try:
            pickup = await watch_pickup(handle, timeout=timeout, first_failure=True)
        finally:
            await terminate_quietly(handle, "probe: does a worker serve this agent?")
        if pickup.unregistered:
            return False
        return True if pickup.taken or pickup.failures else None

    async def state(
        self, workflow_id: str, *, timeout: float | None = None, lineage: bool = False
    ) -> AgentState:
        """The agent's ``AgentState`` (works on finished runs too).

        Args:
            workflow_id: The agent's workflow id.
            timeout: Seconds to wait for a worker to answer (a query needs one);
                default: no limit.
            lineage: Also fill in ``forks`` (a visibility listing) and ``rewinds`` (the
                current run's history), which the run itself does not know.

        Raises:
            AgentNotFoundError: No run has that workflow id.
            AgentPausedError: The run is paused.
            ClientError: No worker answered within ``timeout``, or the query failed.

        Changed in 0.3.0: ``timeout``. Changed in 0.9.0: with a principal whose role may
        not operate runs (viewer, approver), ``data`` is empty, as the gateway showed it.
        Changed in 0.10.0: ``lineage``.
        """
        await self.identity.owns(workflow_id)
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            async with asyncio.timeout(timeout):
                state: AgentState = await self._across_runs(
                    workflow_id, lambda: handle.query(STATE_QUERY, result_type=AgentState)
                )
        except TimeoutError:
            raise ClientError(
                f"no worker answered the state query of {workflow_id!r} within {timeout:g}s; "
                "is a worker for its agent running?"
            ) from None
        except WorkflowQueryFailedError as exc:
            raise ClientError(f"cannot read the state of {workflow_id!r}: {exc}") from exc
        except ValueError as exc:
            # The server refuses queries to a paused run with a status the SDK predates.
            if await is_paused(self.client, workflow_id):
                raise AgentPausedError(
                    f"agent {workflow_id!r} is paused: it answers no query until "
                    f"`smyth resume {workflow_id}`"
                ) from exc
            raise
        if not self.identity.may("operate"):
            # What an agent keeps for itself (working notes, intermediate results) is not
            # part of what a read-only key is for.
            state = state.model_copy(update={"data": {}})
        if lineage:
            forks = await forks_of(
                self.client, workflow_id, state.tenant, tenancy=self.identity.tenancy
            )
            rewinds = await rewinds_of(self.client, workflow_id)
            state = state.model_copy(update={"forks": forks, "rewinds": rewinds})
        return state

    async def pending_request(
        self, workflow_id: str, *, timeout: float | None = None
    ) -> ApprovalRequest:
        """The request a decision without a request id would apply to: the only pending one.

        Show it to the person who decides, then send the decision with its ``id`` and
        ``arguments_sha256``, so a request that replaced it meanwhile is not decided
        in its place.

        Raises:
            InvalidDecisionError: No request is pending, or several are (name one).
            AgentNotFoundError: No run has that workflow id.
            ClientError: No worker answered within ``timeout``.

        Added in 0.8.0.
        """
        state = await self.state(workflow_id, timeout=timeout)
        pending = state.pending_approvals
        if not pending:
            status = await self.status(workflow_id)
            if status not in (None, WorkflowExecutionStatus.RUNNING):
                raise ended_refusal(workflow_id, status)  # as ``decide`` says it
            raise InvalidDecisionError(f"no approval request is pending on {workflow_id!r}")
        if len(pending) > 1:
            ids = ", ".join(r.id for r in pending)
            raise InvalidDecisionError(f"{len(pending)} requests are pending ({ids}): name one")
        return pending[0]

    async def result(
        self,
        workflow_id: str,
        *,
        on_progress: Callable[[AgentState], None] | None = None,
        progress_delay: float = 0.0,
        output_type: Any = None,
    ) -> AgentResult:
        """Wait for the run to end and return its result.

        Args:
            workflow_id: The agent's workflow id.
            on_progress: Called with the agent's state whenever it changes while the
                run goes on (best effort: polled every ``PROGRESS_INTERVAL`` seconds,
                and skipped while no worker answers).
            progress_delay: Seconds before the first poll, so a run that has already
                ended returns without one.
            output_type: The agent's ``output_type``: ``data`` comes back as an instance
                of it (validated again here) instead of its JSON form.

        Raises:
            AgentNotFoundError: No run has that workflow id.
            AgentFailedError: The run failed, was terminated, cancelled or timed out.

        Changed in 0.3.0: ``on_progress``, ``output_type``.
        """
        watcher = (
            asyncio.create_task(self._report_progress(workflow_id, on_progress, progress_delay))
            if on_progress is not None
            else None
        )
        await self.identity.owns(workflow_id)
        handle = self.client.get_workflow_handle(workflow_id, result_type=AgentResult)
        try:
            result: AgentResult = await handle.result()
        except WorkflowFailureError as exc:
            raise AgentFailedError(f"agent {workflow_id} failed: {exc.cause or exc}") from exc
        except RPCError as exc:
            raise translate(exc, workflow_id) from exc
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
        if output_type is not None and result.data is not None:
            data = TypeAdapter(output_type).validate_python(result.data)
            result = result.model_copy(update={"data": data})
        return result

    async def audit(self, workflow_id: str) -> AuditTrail:
        """The audit trail of ``workflow_id``: what every run of it did, from history.

        Model calls, tool and MCP calls, approvals, memory writes and forgets,
        interrupts, lost workers, continue-as-new, resets and rewinds, oldest first;
        the run it was forked from and the runs forked from it.

        Raises:
            AgentNotFoundError: No run has that id.

        Added in 0.4.0. Changed in 0.10.0: lineage (``fork_of``, ``forks``), rewinds.
        """
        await self.identity.owns(workflow_id)
        trail = await read_audit(self.client, workflow_id)
        started = trail.of("run_started")
        tenant = started[0].fields.get("tenant") if started else None
        forks = await forks_of(
            self.client, workflow_id, tenant or "default", tenancy=self.identity.tenancy
        )
        return trail.model_copy(update={"forks": forks})

    async def workers_polling(self, task_queue: str | None = None) -> int:
        """How many workers poll the agents' task queue for workflow tasks right now."""
        return len(await pollers(self.client, task_queue or self.task_queue))

    async def wait_for_worker(self, task_queue: str | None = None, *, timeout: float) -> bool:
        """Wait until a worker polls the task queue; whether one did within ``timeout``.

        Added in 0.3.0.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not await self.workers_polling(task_queue):
                    await asyncio.sleep(_WORKER_POLL_INTERVAL)
                return True
        return False

    async def _report_progress(
        self, workflow_id: str, report: Callable[[AgentState], None], delay: float
    ) -> None:
        await asyncio.sleep(delay)
        last: AgentState | None = None
        while True:
            try:
                state = await self.state(workflow_id, timeout=_PROGRESS_QUERY_TIMEOUT)
            except (ClientError, RPCError):
                state = None  # ``result`` reports real problems; progress is best-effort
            if state is not None:
                if state != last:
                    report(state)
                    last = state
                if state.status in TERMINAL_STATUSES:
                    return
            await asyncio.sleep(PROGRESS_INTERVAL)
