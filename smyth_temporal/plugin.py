"""``SmythPlugin``: the whole integration for a Temporal client and its workers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    ExternalStorage,
    PayloadCodec,
)
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from smyth_temporal._model_queue import ModelQueueInterceptor, ModelQueueRoute
from smyth_temporal._passthrough import shared_modules
from smyth_temporal._payloads import PydanticConverter
from smyth_temporal._probe import ProbeInterceptor
from smyth_temporal.activities.memory import MemoryActivities
from smyth_temporal.activities.model import ModelActivities
from smyth_temporal.activities.review import reviewer_activities
from smyth_temporal.activities.tools import tool_activities
from smyth_temporal.agent.budget import TenantBudget, VersionedTenantBudget
from smyth_temporal.agent.live import LiveChannel
from smyth_temporal.agent.memory_admin import MemoryAdmin
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.exceptions import ConfigurationError, RunError, UserError
from smyth_temporal.memory import MemoryManager, default_memory
from smyth_temporal.models import ModelProvider, ModelRouter, load_price_table
from smyth_temporal.security import KeyRing, SealedPayloadConverter, Secrets
from smyth_temporal.settings import (
    ObservabilitySettings,
    Settings,
    WorkerSettings,
    current_environment,
)
from smyth_temporal.storage import (
    QueryAnswers,
    default_payload_storage,
    inline_query_results,
    with_chunk_codec,
)
from smyth_temporal.tools import Tool, policies_reviewers
from smyth_temporal.types.budget import PriceTable
from smyth_temporal.types.model import model_task_queue

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from smyth_temporal.mcp import MCPConnections, MCPServerConfig
    from smyth_temporal.notifications import Notifications

__all__ = [
    "DEFAULT_HEARTBEAT_THROTTLE",
    "DEFAULT_STICKY_QUEUE_TIMEOUT",
    "PASSTHROUGH_MODULES",
    "WORKFLOW_FAILURE_EXCEPTION_TYPES",
    "SmythPlugin",
]

PASSTHROUGH_MODULES = (
    "smyth_temporal._logging",
    "smyth_temporal._telemetry",
    "smyth_temporal._names",
    "smyth_temporal.agent",
    "smyth_temporal.context",
    "smyth_temporal.exceptions",
    "smyth_temporal.tools",
    "smyth_temporal.types",
    "structlog",
    "pydantic",
    "pydantic_core",
)
"""Modules the workflow sandbox shares instead of re-importing for every run.

Only the deterministic layers of smyth_temporal (the agent runtime, the context
engine, tool specs, the wire types) and the libraries they use: sharing them keeps
model classes identical inside and outside the sandbox and makes starts cheap. Every
other module (clients, activities, providers) is imported afresh inside the sandbox
if workflow code reaches for it, where the sandbox checks it.
tests/architecture/test_architecture.py proves these import nothing with I/O.
"""

WORKFLOW_FAILURE_EXCEPTION_TYPES: tuple[type[BaseException], ...] = (UserError, RunError)
"""Exceptions that fail a run when raised in workflow code (instead of failing the
workflow task, which Temporal retries forever): misuse and the run failures."""

DEFAULT_STICKY_QUEUE_TIMEOUT = timedelta(seconds=2)
"""How long a workflow task waits for the worker that has the run cached.

After a crash the server keeps sending a run's tasks to the dead worker's sticky queue
until this expires (it only skips a sticky queue whose worker has not polled for 10 s),
so every crash pays it in full: measured here, recovery to completion took 18 s with
Temporal's default of 10 s, 12 s with 3 s and 9 s with 1 s. 2 s keeps recovery quick,
while a busy worker that misses the window costs only a replay of the run.
"""

_TEMPORAL_STICKY_QUEUE_TIMEOUT = timedelta(seconds=10)

DEFAULT_HEARTBEAT_THROTTLE = timedelta(milliseconds=500)
"""The longest a worker holds back an activity's heartbeat before sending it.

temporalio sends at most one heartbeat per 80% of the heartbeat timeout: 1.6 s of a 2 s
timeout, which leaves a late beat 0.4 s of slack before the server re-runs a healthy
call. Sending every 0.5 s (what ``auto_heartbeat`` beats at) leaves it 1.5 s. Set as
the worker's ``max_heartbeat_throttle_interval`` unless one is given. Added in 0.5.0.
"""

_TEMPORAL_HEARTBEAT_THROTTLE = timedelta(seconds=60)


class _Default(enum.Enum):
    """Tells "not given" (use the default) from an explicit ``None`` (off)."""

    DEFAULT = enum.auto()


_DEFAULT: Final = _Default.DEFAULT


class SmythPlugin(SimplePlugin):
    """Configures a Temporal client and its workers for smyth agents.

    On the client: the pydantic data converter, with large payloads kept out of
    history in a content-addressed store (see ``smyth_temporal.storage``). On a worker
    (inherited from the client): the model activity with the worker's model provider,
    one activity per tool of every agent class in ``workflows``, the workflow sandbox's
    passthrough modules (smyth's deterministic layers, and the modules of the agents'
    tools and their types: see ``passthrough_modules``), and a short sticky-queue
    timeout for fast crash recovery.

    ```python
    client = await Client.connect("localhost:7233", plugins=[SmythPlugin(model=provider)])
    worker = Worker(client, task_queue="smyth-agents", workflows=[MarketAnalyst])
    ```

    Added in 0.1.0. Changed in 0.2.0: ``payload_storage``. Changed in 0.3.0:
    ``mcp_servers``. Changed in 0.4.0: ``encryption``, ``secrets``. Changed in 0.6.0:
    ``passthrough_modules``; workers share the modules of their agents' tools. Changed
    in 0.9.0: ``notifications``.
    """

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        model: ModelProvider | Mapping[str, ModelProvider] | None = None,
        tools: Sequence[Tool] = (),
        memory: MemoryManager | None = None,
        sticky_queue_timeout: timedelta | None = DEFAULT_STICKY_QUEUE_TIMEOUT,
        payload_storage: ExternalStorage | _Default | None = _DEFAULT,
        mcp_servers: Mapping[str, MCPServerConfig] | None = None,
        encryption: PayloadCodec | _Default | None = _DEFAULT,
        secrets: Secrets | None = None,
        serve_model_queue: bool = True,
        prices: PriceTable | None = None,
        tracing: bool | TracerProvider | None = None,
        passthrough_modules: Sequence[str] = (),
        notifications: Notifications | None = None,
    ) -> None:
        """Create the plugin.

        Every default below comes from ``settings``: a worker's ``WorkerSettings``
        (``smyth worker`` and ``run_worker`` pass theirs), or a client's ``Settings``
        (the payload store and encryption; a worker then reads the rest from the
        environment when it starts). Without settings, each part reads its own from
        the environment (``PayloadSettings``, ``EncryptionSettings``...), when it is
        needed. A keyword argument wins over the settings.

        Args:
            settings: The settings the defaults come from (see above). Added in 0.9.0.
            model: The provider that answers model calls on workers, or a mapping from
                model-name patterns to providers (see ``ModelRouter``). Default: the
                OpenAI-compatible provider from ``OPENAI_BASE_URL``/``OPENAI_API_KEY``,
                built when a worker starts. Clients need none.
            tools: Tools to register besides those of the agents' configs (tools an
                agent offers only in some turns, for example).
            memory: Long-term memory for agents with a ``memory_namespace``. Default,
                built when a worker has such agents: a Qdrant server if ``QDRANT_URL``
                is set, else Qdrant Edge under ``.smyth/memory``, with the embedder
                named by ``SMYTH_EMBEDDER`` (offline hashing by default).
            sticky_queue_timeout: See ``DEFAULT_STICKY_QUEUE_TIMEOUT``; it replaces
                Temporal's default only, so a value passed to ``Worker`` wins; ``None``
                keeps Temporal's default.
            payload_storage: Where payloads above a size threshold go instead of
                history (temporalio's ``ExternalStorage``). Default:
                ``default_payload_storage()``, a content-addressed file store under
                ``.smyth/payloads`` configured by ``SMYTH_PAYLOAD_*``; ``None``: every
                payload stays in history. Clients and workers must agree on it.
            mcp_servers: The MCP servers agents may name (``AgentConfig.mcp_servers``),
                by name: ``StdioServer`` or ``HttpServer`` from ``smyth_temporal.mcp``.
                A worker opens them all before it polls (and fails naming one it
                cannot reach), serves their ``list_tools``/``call_tool`` activities,
                and closes them when it stops. Needs the ``mcp`` extra.
            encryption: The codec every payload goes through before it leaves the
                process (history, the payload store, the event stream). Default:
                ``EncryptionCodec.from_env()``, AES-256-GCM with the keys of
                ``SMYTH_ENCRYPTION_KEYS`` or ``SMYTH_ENCRYPTION_KEY_FILE``, or none
                when neither is set; ``None``: no codec. Clients, workers and the
                codec server must share the keys.
            secrets: What resolves ``secret("NAME")`` on workers: for tools
                (``@tool(secrets=[...])``) and MCP server headers or environments.
                Default: ``Secrets.from_env()`` (``SMYTH_SECRETS_FILE``, then the
                environment), allowed exactly the names the worker's tools and MCP
                servers declare unless ``SMYTH_ALLOWED_SECRETS`` lists them (then a
                declared name outside the list stops the worker at start, as does a
                declared name no backend has).
            serve_model_queue: Agent workers also poll their model task queue
                (``<queue>-models``) in the same process, and keep model calls on the
                agents' queue (eagerly dispatched) while the model queue has no limit
                or weight; ``False`` leaves model calls to dedicated workers
                (``Worker(client, task_queue=model_task_queue(q),
                activities=[ModelActivities(provider).complete])``), always. Added in
                0.5.0. Changed in 0.8.0: model calls on the agents' queue until limited.
            prices: What model calls cost (``Usage.cost``, ``AgentConfig.max_cost``,
                tenant budgets). Default: ``load_price_table()``, from
                ``SMYTH_PRICES_FILE`` or ``.smyth/prices.toml``, read when a worker
                starts. Added in 0.5.0.
            tracing: Trace agents with OpenTelemetry (``tracing_interceptors`` of
                ``smyth_temporal.observability``): ``True`` sends spans to the global
                tracer provider, a ``TracerProvider`` to that one; ``None``: the
                settings' ``tracing`` (``SMYTH_TRACING``), else off. Set it on the
                client that starts agents too, so that one run is one trace. Needs
                the ``otel`` extra. Added in 0.5.0.
            passthrough_modules: More of your modules that workflow code imports and
                every run may share (pydantic models, constants), instead of the
                sandbox importing them again for each run it starts. A worker already
                shares the modules its agents' tools, their argument types and the
                agents' ``output_type`` come from, unless such a module defines or
                imports a workflow (those stay per run, like the agents' own modules).
                Share only modules whose state no workflow code changes. Added in 0.6.0.
            notifications: The channels approval policies may name to tell people a
                request waits (``smyth_temporal.notifications``): webhooks and e-mail,
                with their URLs and credentials, which never enter history. Agent
                workers always serve the notification activity; without the channel, a
                notification fails naming it (and is retried elsewhere). Default, read when a
                worker starts: ``SMYTH_NOTIFY``, ``SMYTH_WEBHOOK_SECRET``,
                ``SMYTH_SMTP_URL`` and ``SMYTH_CONSOLE_URL`` (``NotifySettings``).
                Added in 0.9.0.
        """
        storage = (
            default_payload_storage(settings) if payload_storage is _DEFAULT else payload_storage
        )
        codec = _default_codec(settings) if encryption is _DEFAULT else encryption
        if storage is not None:
            storage = with_chunk_codec(storage, codec)  # chunks sealed one by one
            # A query's answer (marked by ``QueryAnswers``) is in no history: kept
            # inline, not written to the store.
            storage = inline_query_results(storage)
        converter: DataConverter = pydantic_data_converter
        if storage is not None or codec is not None:
            # The codec runs first, so the store only ever holds ciphertext. temporalio
            # copies this converter for each call: ``PydanticConverter`` keeps its type
            # adapters across the copies (``smyth_temporal._payloads``).
            converter = dataclasses.replace(
                pydantic_data_converter,
                payload_codec=codec,
                external_storage=storage,
                payload_converter_class=PydanticConverter,
            )
        if codec is not None:
            # Failure messages and stack traces quote tool errors and arguments: with a
            # codec they travel as an encoded payload, not as plaintext in history.
            # A payload the codec refused (unsealed) reads as a clear error.
            converter = dataclasses.replace(
                converter,
                failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
                payload_converter_class=SealedPayloadConverter,
            )
        super().__init__(
            "smyth_temporal.SmythPlugin",
            data_converter=converter,
            workflow_runner=_with_passthrough,
            workflow_failure_exception_types=list(WORKFLOW_FAILURE_EXCEPTION_TYPES),
            interceptors=[
                *(_tracing(_traces(tracing, settings)) or ()),
                # A query's answer is in no history: marked, the store leaves it inline.
                *([QueryAnswers()] if storage is not None else ()),
            ]
            or None,
        )
        self._settings = settings
        self._model = model
        self._tools = tuple(tools)
        self._memory = memory
        self._sticky_queue_timeout = sticky_queue_timeout
        self._secrets = secrets
        # Read now, like the payload store: the memory is opened later, lazily, and
        # must belong to the environment this plugin was made for.
        self._environment = settings.environment if settings is not None else current_environment()
        self._model_calls: dict[str, Callable[..., Any]] = {}
        self._serve_model_queue = serve_model_queue
        self._model_routes: dict[str, ModelQueueRoute] = {}
        self._prices = prices
        self._passthrough = tuple(passthrough_modules)
        self._notifications = notifications
        self._mcp: MCPConnections | None = None
        if mcp_servers:
            from smyth_temporal.mcp import MCPConnections

            self._mcp = MCPConnections(mcp_servers)

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add the agents' activities and tune the worker for crash recovery."""
        config = super().configure_worker(config)
        agents: list[type[AgentWorkflow]] = [
            w for w in config.get("workflows") or () if _is_agent(w)
        ]
        tools = [t for agent in agents for t in agent.config.tools] + list(self._tools)
        shared = [*self._passthrough, *shared_modules(agents, tools)]
        config["workflow_runner"] = _with_passthrough(config.get("workflow_runner"), *shared)
        if not agents and not self._tools:
            return config
        activities: list[Callable[..., Any]] = list(config.get("activities") or ())
        secrets = self._worker_secrets(tools)
        activities += tool_activities(tools, secrets)
        activities += self._mcp_activities(agents)
        prices = self._prices
        if prices is None:
            prices = load_price_table(self.worker_settings().prices_file)
        model = ModelActivities(self._provider(), prices).complete
        # Also here, for agents with ``model_task_queue=False`` (and calls scheduled
        # before model calls had their own queue); ``run_worker`` polls that queue.
        activities.append(model)
        # Automatic reviewers of approval requests (smyth.reviewer.<name>), whatever
        # names them: a tool's policy, an MCP override, the agent's own.
        policies: list[object] = [t.requires_approval for t in tools]
        policies += [a.config.approval_policy for a in agents]
        policies += [p for a in agents for p in a.config.mcp_approval.values()]
        activities += reviewer_activities(policies_reviewers(policies), self._provider())
        # Approval notifications (smyth.notify.approval), channels or none. Imported
        # here: workflow modules that name SmythPlugin import this module inside the
        # sandbox, which refuses the HTTP client's imports.
        from smyth_temporal.notifications import NotificationActivities, Notifications

        if self._notifications is None:
            # Read when a worker starts, as the payload store and the memory are.
            self._notifications = Notifications.from_settings(self.worker_settings())
        named = [policy for spec in tools if (policy := spec.approval_policy) is not None]
        self._notifications.missing(named)  # logs the channels this worker lacks
        activities.append(NotificationActivities(self._notifications).notify_approval)
        if "task_queue" in config and self._serve_model_queue:
            self._model_calls[config["task_queue"]] = model
        if "task_queue" in config and agents:
            # Model calls stay on the agents' queue (eagerly dispatched) until the model
            # queue has a limit; ``run_worker`` keeps the route up to date.
            route = self._model_routes.setdefault(
                config["task_queue"],
                ModelQueueRoute(config["task_queue"], served=self._serve_model_queue),
            )
            # Probe runs (is the agent served?) end before any agent code runs.
            config["interceptors"] = [
                *config.get("interceptors", ()),
                ModelQueueInterceptor(route),
                ProbeInterceptor(),
            ]
        # Every worker serves memory: its agents' recall and remember, the compacted
        # turns they archive, and the MemoryAdmin workflow through which clients and
        # the gateway search and forget, so one worker of a queue is enough whatever
        # agents it hosts. The store opens at the first call, so a worker whose runs
        # never touch memory never opens it.
        activities += MemoryActivities(self._memory_manager).all()
        # Tenants' budgets (reserve, commit, release) live on agent workers.
        deployment = config.get("deployment_config")
        versioned = deployment is not None and deployment.use_worker_versioning
        budget = VersionedTenantBudget if versioned else TenantBudget
        # Streamed turns write their text to a live channel on the agent's queue.
        config["workflows"] = [*config.get("workflows", ()), budget, LiveChannel]
        config["workflows"] = [*config.get("workflows", ()), MemoryAdmin]
        config["activities"] = activities
        # Only replace Temporal's default: a value the user passed to Worker() wins.
        current = config.get("sticky_queue_schedule_to_start_timeout")
        if self._sticky_queue_timeout is not None and current in (
            None,
            _TEMPORAL_STICKY_QUEUE_TIMEOUT,
        ):
            config["sticky_queue_schedule_to_start_timeout"] = self._sticky_queue_timeout
        if config.get("max_heartbeat_throttle_interval") in (None, _TEMPORAL_HEARTBEAT_THROTTLE):
            config["max_heartbeat_throttle_interval"] = DEFAULT_HEARTBEAT_THROTTLE
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Poll the model task queue beside the worker; open the MCP servers first.

        An agent worker on task queue ``Q`` runs a second worker in the same process
        for ``Q-models`` (``model_task_queue``), where agents send their model calls
        once a limit or a weight is set there: the server's rate limit and fairness for
        that queue then hold fleet-wide. Until then the calls stay on ``Q``, where the
        server dispatches them eagerly (see ``smyth_temporal._model_queue``); the worker
        reads that queue's config before it polls and every ``MODEL_LIMITS_REFRESH``.

        Raises:
            ConfigurationError: An MCP server cannot be reached (the message names it).
        """
        route = self._model_routes.get(worker.task_queue)
        if route is None:
            await self._run_with_model_worker(worker, next)
            return
        await route.refresh(worker.client)
        watching = asyncio.create_task(route.watch(worker.client))
        try:
            await self._run_with_model_worker(worker, next)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching

    async def _run_with_model_worker(
        self, worker: Worker, next: Callable[[Worker], Awaitable[None]]
    ) -> None:
        model_worker = self._model_worker(worker)
        if model_worker is None:
            await self._run_with_mcp(worker, next)
            return
        async with model_worker:
            await self._run_with_mcp(worker, next)

    def _model_worker(self, worker: Worker) -> Worker | None:
        """A worker for the model calls of ``worker``'s agents, or ``None`` (no agents)."""
        model = self._model_calls.get(worker.task_queue)
        if model is None:
            return None
        config = worker.config(active_config=True)
        # The same connection and converter, without the plugins (which would make it
        # an agent worker again).
        client_config = worker.client.config(active_config=True)
        client_config["plugins"] = []
        client = Client(**client_config)
        return Worker(
            client,
            task_queue=model_task_queue(worker.task_queue),
            activities=[model],
            interceptors=[
                i
                for i in config.get("interceptors", ())
                if not isinstance(i, ModelQueueInterceptor | ProbeInterceptor)
            ],
            identity=config.get("identity"),
            deployment_config=config.get("deployment_config"),
            graceful_shutdown_timeout=config.get("graceful_shutdown_timeout", timedelta()),
            max_concurrent_activities=config.get("max_concurrent_activities"),
            max_heartbeat_throttle_interval=config.get(
                "max_heartbeat_throttle_interval", DEFAULT_HEARTBEAT_THROTTLE
            ),
        )

    async def _run_with_mcp(
        self, worker: Worker, next: Callable[[Worker], Awaitable[None]]
    ) -> None:
        """Open the MCP servers before the worker polls, close them after it stops."""
        if self._mcp is None:
            await super().run_worker(worker, next)
            return
        try:
            await self._mcp.acquire()
        except ConfigurationError:
            # Let the worker start and stop at once: a worker whose run never started
            # would wait forever for its shutdown (in `async with worker`).
            stopping = asyncio.create_task(worker.shutdown())
            await super().run_worker(worker, next)
            await stopping
            raise
        try:
            await super().run_worker(worker, next)
        finally:
            await self._mcp.release()

    def _mcp_activities(self, agents: Sequence[type[AgentWorkflow]]) -> list[Callable[..., Any]]:
        """The MCP activities, after checking that every server an agent names is here."""
        known = self._mcp.names if self._mcp is not None else []
        for agent in agents:
            missing = [s for s in agent.config.mcp_servers if s not in known]
            if missing:
                have = ", ".join(known) or "none"
                raise ConfigurationError(
                    f"{agent.__name__} names MCP servers {missing} that this worker does not "
                    f"have (it has: {have}); add them with SmythPlugin(mcp_servers=...) or "
                    "smyth worker --mcp NAME=COMMAND|URL"
                )
        if self._mcp is None:
            return []
        from smyth_temporal.mcp import MCPActivities

        return MCPActivities(self._mcp).all()

    def _worker_secrets(self, tools: Sequence[Tool]) -> Secrets:
        """The resolver, allowed what this worker's tools and MCP servers declare."""
        declared = {name for spec in tools for name in spec.secrets}
        if self._mcp is not None:
            declared |= {n for server in self._mcp.servers.values() for n in server.secret_names()}
        secrets = self._secrets or Secrets.from_settings(self.worker_settings())
        secrets = secrets.restrict(declared)
        if self._mcp is not None:
            self._mcp.secrets = secrets
        return secrets

    def worker_settings(self) -> WorkerSettings:
        """The settings this plugin's workers run with.

        Those given if they are ``WorkerSettings``; else read once, when first needed
        (a worker starts), with the values of the ``Settings`` given over the sources.

        Raises:
            ConfigurationError: A worker setting is invalid (the message names it).

        Added in 0.9.0.
        """
        if not isinstance(self._settings, WorkerSettings):
            given = self._settings
            self._settings = (
                WorkerSettings.load() if given is None else WorkerSettings.based_on(given)
            )
        return self._settings

    def _memory_manager(self) -> MemoryManager:
        if self._memory is None:
            self._memory = default_memory(self._environment, settings=self.worker_settings())
        return self._memory

    def _provider(self) -> ModelProvider:
        if self._model is None:
            from smyth_temporal.models import default_provider

            self._model = default_provider(self.worker_settings())
        if isinstance(self._model, Mapping):
            self._model = ModelRouter(self._model)
        return self._model


def _default_codec(settings: Settings | None) -> PayloadCodec | None:
    # `cryptography` is imported only when a key is set: workflow modules that name
    # SmythPlugin import this module inside the sandbox, which cannot re-import
    # cryptography's compiled extension.
    keys = KeyRing.from_env() if settings is None else KeyRing.from_settings(settings)
    if keys is None:
        return None
    from smyth_temporal.security import EncryptionCodec

    return (
        EncryptionCodec.from_env() if settings is None else EncryptionCodec.from_settings(settings)
    )


def _traces(
    tracing: bool | TracerProvider | None, settings: Settings | None
) -> bool | TracerProvider:
    if tracing is not None:
        return tracing
    return isinstance(settings, ObservabilitySettings) and settings.tracing


def _tracing(tracing: bool | TracerProvider) -> list[Any] | None:
    if tracing is False:
        return None
    # Imported only when asked for: it needs the otel extra.
    from smyth_temporal.observability import tracing_interceptors

    return list(tracing_interceptors(None if tracing is True else tracing))


def _is_agent(cls: object) -> TypeGuard[type[AgentWorkflow]]:
    return isinstance(cls, type) and issubclass(cls, AgentWorkflow) and hasattr(cls, "config")


def _with_passthrough(existing: WorkflowRunner | None, *modules: str) -> WorkflowRunner:
    runner = existing or SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner  # the user chose an unsandboxed runner on purpose
    restrictions = runner.restrictions.with_passthrough_modules(*PASSTHROUGH_MODULES, *modules)
    return dataclasses.replace(runner, restrictions=restrictions)
