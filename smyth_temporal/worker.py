"""The worker runtime: load agent classes and a model provider, then serve them.

Both ``smyth worker module:Class`` and ``python -m workers.agent_worker module:Class``
end up in ``run_worker``:

```python
agents = load_agents(["examples.market_monitor.workflows:MarketMonitor"])
await run_worker(agents, settings=WorkerSettings.load(task_queue="trading"))
```

The worker's settings (``WorkerSettings``) are one model from the command's options,
the environment, ``.env`` and ``temporal.toml``; ``run_worker`` hands the same object to
``SmythPlugin``.

Added in 0.1.0.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import structlog
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from smyth_temporal._names import workflow_type_name
from smyth_temporal._prometheus import prometheus_runtime
from smyth_temporal.agent.workflow import AgentWorkflow
from smyth_temporal.clients import connect_client, deployment_config, pollers
from smyth_temporal.exceptions import ConfigurationError, UnknownAgentError
from smyth_temporal.mcp import MCPServerConfig
from smyth_temporal.models import ModelProvider, ModelRouter
from smyth_temporal.notifications import Notifications
from smyth_temporal.plugin import SmythPlugin
from smyth_temporal.security import Secrets
from smyth_temporal.settings import (
    DEFAULT_MODEL_PROVIDER,
    MODEL_PROVIDER_ENV,
    ModelSettings,
    Settings,
    WorkerSettings,
)

__all__ = [
    "DEFAULT_GRACEFUL_SHUTDOWN",
    "DEFAULT_MODEL_PROVIDER",
    "MODEL_PROVIDER_ENV",
    "load_agent",
    "load_agents",
    "load_model_provider",
    "run_worker",
    "worker_settings",
]

log = structlog.get_logger("smyth_temporal.worker")

DEFAULT_GRACEFUL_SHUTDOWN = timedelta(seconds=5)
"""How long in-flight activities may finish after a stop signal before they are cancelled.

A model call or tool cut short is retried elsewhere anyway (at-least-once), so this
only saves work; it is kept short so that stopping a worker stays snappy.
"""

_POLLER_CHECK_INTERVAL = 0.1
_POLLER_CHECK_MAX_INTERVAL = 1.0


def load_agents(specs: Sequence[str]) -> list[type[AgentWorkflow]]:
    """Import agent classes from ``module:Class`` specs.

    The current directory is put first on ``sys.path`` (as uvicorn does), so
    ``examples.market_monitor.workflows:MarketMonitor`` imports from a checkout without
    installing it. A class named twice is loaded once.

    Args:
        specs: ``module:Class`` strings (``module:Outer.Inner`` for nested classes).

    Returns:
        The agent classes, in the order given.

    Raises:
        UnknownAgentError: A module or attribute is missing, or an attribute is not a
            ``@workflow.defn`` ``AgentWorkflow`` subclass with a ``config``.
        ConfigurationError: Two different classes register the same workflow name.

    Added in 0.1.0.
    """
    if not specs:
        raise UnknownAgentError("no agent given; name one as module:Class")
    agents: list[type[AgentWorkflow]] = []
    names: dict[str, str] = {}
    for spec in specs:
        agent = load_agent(spec)
        if agent in agents:
            continue
        name = _agent_type(agent)
        if name in names:
            # The worker would refuse this anyway, with a less helpful message.
            raise ConfigurationError(
                f"{spec} and {names[name]} both register the workflow name {name!r}"
            )
        names[name] = spec
        agents.append(agent)
    return agents


def load_agent(spec: str) -> type[AgentWorkflow]:
    """Import one agent class from ``module:Class`` (see ``load_agents``).

    Raises:
        UnknownAgentError: The spec does not name an agent class.

    Added in 0.1.0.
    """
    target = _import_target(spec, what="agent", error=UnknownAgentError)
    if not isinstance(target, type) or not issubclass(target, AgentWorkflow):
        raise UnknownAgentError(
            f"{spec} is not an agent: expected a subclass of smyth_temporal.AgentWorkflow, "
            f"got {_describe(target)}"
        )
    agent: type[AgentWorkflow] = target
    if not _is_workflow_defn(agent):
        raise UnknownAgentError(f"{spec} is not decorated with @workflow.defn")
    # hasattr() would narrow the type for mypy; the class must define it (or inherit it).
    if getattr(agent, "config", None) is None:
        raise UnknownAgentError(f"{spec} has no `config = AgentConfig(...)` class attribute")
    return agent


def load_model_provider(spec: str, *, settings: ModelSettings | None = None) -> ModelProvider:
    """The model provider a spec names.

    Args:
        spec: ``openai`` for the OpenAI-compatible provider (``OPENAI_BASE_URL``,
            ``OPENAI_API_KEY``), or ``module:attr`` naming a provider, a mapping of
            model-name patterns to providers (see ``ModelRouter``), or a zero-argument
            callable (a class, a factory) that returns either.
        settings: The OpenAI-compatible endpoint and key (default: the environment's).

    Returns:
        A provider with an async ``complete`` method.

    Raises:
        ConfigurationError: The spec names nothing usable, or the OpenAI provider has
            no API key.

    Added in 0.1.0. Changed in 0.9.0: ``settings``.
    """
    spec = spec.strip()
    if spec == DEFAULT_MODEL_PROVIDER:
        from smyth_temporal.models import default_provider

        return default_provider(settings if settings is not None else ModelSettings.load())
    if ":" not in spec:
        raise ConfigurationError(
            f"unknown model provider {spec!r}: use 'openai' or 'module:attr' "
            "(e.g. myapp.models:provider)"
        )
    target = _import_target(spec, what="model provider", error=ConfigurationError)
    if isinstance(target, type) or (callable(target) and not _has_async_complete(target)):
        try:
            target = target()
        except TypeError as exc:
            raise ConfigurationError(
                f"model provider {spec} must be callable without arguments: {exc}"
            ) from exc
    if isinstance(target, Mapping):
        return ModelRouter(target)
    if not _has_async_complete(target):
        raise ConfigurationError(
            f"model provider {spec} is {_describe(target)}, which has no "
            "`async def complete(self, request)` method"
        )
    return cast(ModelProvider, target)


async def run_worker(
    agents: Sequence[type[AgentWorkflow]],
    *,
    settings: Settings | None = None,
    model: ModelProvider | None = None,
    max_cached_workflows: int | None = None,
    ready: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
    graceful_shutdown_timeout: timedelta = DEFAULT_GRACEFUL_SHUTDOWN,
    mcp_servers: Mapping[str, MCPServerConfig] | None = None,
    secrets: Secrets | None = None,
    deployment: WorkerDeploymentVersion | None = None,
    metrics: str | None = None,
    tracing: bool | None = None,
    notifications: Notifications | None = None,
) -> None:
    """Serve ``agents`` on ``settings.task_queue`` until SIGINT/SIGTERM (or ``stop``).

    Logs ``worker.ready`` once the server sees this worker poll the task queue (so an
    agent started after that is picked up), then ``worker.stopped`` after a graceful
    shutdown. A second signal while shutting down is not intercepted, so a second
    Ctrl-C forces the exit.

    Every setting comes from ``settings``, handed as they are to ``SmythPlugin``; the
    keyword arguments that are settings too (``max_cached_workflows``, ``deployment``,
    ``metrics``, ``tracing``) win over them when given, as a command's options do.

    Args:
        agents: The agent classes to serve (see ``load_agents``).
        settings: The worker's settings (default: ``WorkerSettings.load()``); a
            client's ``Settings`` is read as ``WorkerSettings`` with its values.
        model: The provider that answers the agents' model calls (default: the one
            ``settings.model_provider`` names, see ``load_model_provider``).
        max_cached_workflows: Runs kept in memory (default: temporalio's, 1000); a
            smaller cache bounds memory when many agents wait for a long time.
        ready: Called once, when the worker polls.
        stop: Stops the worker when set (for embedding; signals stop it too).
        graceful_shutdown_timeout: See ``DEFAULT_GRACEFUL_SHUTDOWN``.
        mcp_servers: The MCP servers the agents may name (see ``SmythPlugin``); the
            worker opens them before it polls.
        secrets: What resolves the secrets of tools and MCP servers (see
            ``SmythPlugin``).
        deployment: Serve as this Worker Deployment Version (see ``deployment_config``):
            agent runs stay pinned to the version that started them; ``None`` serves
            without Worker Versioning.
        metrics: Serve Prometheus metrics (Temporal's and smyth's) on this
            ``host:port``, at ``/metrics`` (see ``prometheus_runtime``).
        tracing: Trace agents with OpenTelemetry through the global tracer provider
            (see ``SmythPlugin``; needs the ``otel`` extra).
        notifications: The approval notification channels policies may name (see
            ``SmythPlugin``).

    Raises:
        ServerUnavailableError: Nothing answers at ``settings.address``.
        KeyboardInterrupt: After the graceful shutdown, when SIGINT stopped the worker
            (so that a CLI exits as an interrupted program does).
        ConfigurationError: An MCP server cannot be reached (the message names it).

    Added in 0.1.0. Changed in 0.3.0: ``mcp_servers``. Changed in 0.4.0: ``secrets``.
    Changed in 0.5.0: ``deployment``, ``metrics``, ``tracing``. Changed in 0.9.0:
    ``notifications``; ``settings`` may be ``WorkerSettings``, ``model`` and
    ``settings`` have defaults.
    """
    if not agents:
        raise UnknownAgentError("no agent to serve")
    names = [_agent_type(agent) for agent in agents]
    settings = worker_settings(
        settings,
        max_cached_workflows=max_cached_workflows,
        metrics_address=metrics,
        tracing=tracing,
    )
    if model is None:
        model = load_model_provider(settings.model_provider, settings=settings)
    if deployment is None:
        deployment = settings.version
    metrics, max_cached_workflows = settings.metrics_address, settings.max_cached_workflows
    plugin = SmythPlugin(
        settings=settings,
        model=model,
        mcp_servers=mcp_servers,
        secrets=secrets,
        notifications=notifications,
    )
    if metrics is not None:
        # The client's runtime is what serves the endpoint, for the worker built on it.
        try:
            runtime = prometheus_runtime(metrics)
        except RuntimeError as exc:  # a taken or malformed address
            raise ConfigurationError(f"cannot serve metrics on {metrics}: {exc}") from exc
        connect = {**settings.connect, "runtime": runtime}
        settings = settings.model_copy(update={"connect": connect})
        log.info("worker.metrics", url=f"http://{metrics}/metrics")
    client = await connect_client(settings, plugins=[plugin])
    await _check_namespace(client, settings)
    options: dict[str, Any] = {}
    if max_cached_workflows is not None:
        options["max_cached_workflows"] = max_cached_workflows
    if deployment is not None:
        options["deployment_config"] = deployment_config(deployment)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=list(agents),
        graceful_shutdown_timeout=graceful_shutdown_timeout,
        **options,
    )
    if stop is None:
        stop = asyncio.Event()
    stopped_by: list[signal.Signals] = []
    loop = asyncio.get_running_loop()
    installed = _install_signal_handlers(loop, stop, stopped_by)
    fields = {"task_queue": settings.task_queue, "agents": names, "address": settings.address}
    if deployment is not None:
        fields["deployment"] = deployment.to_canonical_string()
    run_task = asyncio.create_task(worker.run(), name="smyth-worker")
    stop_task = asyncio.create_task(stop.wait(), name="smyth-worker-stop")
    ready_task = asyncio.create_task(
        _wait_polling(client, settings.task_queue), name="smyth-worker-ready"
    )
    try:
        pending: set[asyncio.Future[Any]] = {run_task, stop_task, ready_task}
        while run_task in pending and stop_task in pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if ready_task in done and ready_task.exception() is None:
                log.info("worker.ready", **fields, namespace=settings.namespace)
                if ready is not None:
                    ready()
        if run_task.done():
            _raise_worker_failure(run_task, settings)
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        ready_task.cancel()
        stop_task.cancel()
        if not run_task.done():
            log.info("worker.stopping", **fields, signal=_signal_name(stopped_by))
            await worker.shutdown()
            await run_task
    log.info("worker.stopped", **fields)
    if stopped_by and stopped_by[0] == signal.SIGINT:
        raise KeyboardInterrupt


def worker_settings(settings: Settings | None = None, **overrides: Any) -> WorkerSettings:
    """``settings`` as ``WorkerSettings``, with ``overrides`` (``None``: not given) over them.

    The same object when it is one already and nothing overrides it, so a command,
    ``run_worker`` and ``SmythPlugin`` share one model.

    Raises:
        ConfigurationError: A setting is invalid (the message names its variable).

    Added in 0.9.0.
    """
    given = {name: value for name, value in overrides.items() if value is not None}
    if settings is None:
        return WorkerSettings.load(**given)
    if not isinstance(settings, WorkerSettings):
        return WorkerSettings.based_on(settings, **given)
    if not given:
        return settings
    return WorkerSettings.based_on(settings, **given)


async def _check_namespace(client: Client, settings: Settings) -> None:
    """Fail with one clear line for an unknown namespace.

    The worker would find out too, but only after its core has logged a warning with
    a dump of the gRPC status.
    """
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=settings.namespace)
        )
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        raise ConfigurationError(
            f"namespace {settings.namespace!r} does not exist at {settings.address}"
        ) from exc


def _raise_worker_failure(run_task: asyncio.Task[None], settings: Settings) -> None:
    """Re-raise why the worker stopped on its own; a failed start becomes one clear line."""
    try:
        run_task.result()
    except RuntimeError as exc:
        text = str(exc)
        if not text.startswith("Worker validation failed"):
            raise
        # The core's message ends in a dump of the gRPC status; the sentence before
        # it ("Namespace x was not found ...") is what the user needs.
        reason = text.split(": Status {", 1)[0]
        raise ConfigurationError(
            f"the worker cannot start (namespace {settings.namespace!r} at "
            f"{settings.address}): {reason}"
        ) from exc


def _install_signal_handlers(
    loop: asyncio.AbstractEventLoop,
    stop: asyncio.Event,
    stopped_by: list[signal.Signals],
) -> list[signal.Signals]:
    """Turn SIGINT/SIGTERM into a graceful stop; only possible on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return []
    installed: list[signal.Signals] = []

    def on_signal(signum: signal.Signals) -> None:
        stopped_by.append(signum)
        stop.set()
        # Give the signals back to Python: a second Ctrl-C interrupts a shutdown that
        # hangs (an activity ignoring cancellation, say).
        for each in installed:
            loop.remove_signal_handler(each)

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (NotImplementedError, RuntimeError):  # not a Unix loop
            continue
        installed.append(signum)
    return installed


async def _wait_polling(client: Client, task_queue: str) -> None:
    """Return once the server lists this client's identity among the queue's pollers.

    ``Worker.run`` has no "started" callback, and a poll only counts once the server
    has it; asking the server is the one way to know an agent started now is served.
    """
    delay = _POLLER_CHECK_INTERVAL
    while True:
        try:
            polling = await pollers(client, task_queue)
        except RPCError as exc:  # only the announcement depends on it: try again
            log.debug("worker.ready_check_failed", task_queue=task_queue, error=exc.message)
        else:
            if any(poller.identity == client.identity for poller in polling):
                return
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, _POLLER_CHECK_MAX_INTERVAL)


def _import_target(spec: str, *, what: str, error: type[Exception]) -> object:
    """Import ``module:attr`` (attr may be dotted), with errors that say what to fix."""
    module_name, sep, attr_path = spec.strip().partition(":")
    if not sep or not module_name or not attr_path:
        raise error(f"expected module:attr for the {what}, got {spec!r}")
    _ensure_cwd_on_path()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            raise error(
                f"cannot import the {what} {spec}: no module named {exc.name!r} "
                f"(looked in {os.getcwd()} and the installed packages)"
            ) from exc
        raise error(f"cannot import the {what} {spec}: {exc}") from exc
    except ImportError as exc:
        raise error(f"cannot import the {what} {spec}: {exc}") from exc
    target: object = module
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            hint = _agents_in(module) if what == "agent" else ""
            raise error(
                f"cannot find the {what} {spec}: module {module_name!r} has no "
                f"attribute {attr_path!r}{hint}"
            ) from None
    return target


def _ensure_cwd_on_path() -> None:
    cwd = str(Path.cwd())
    if sys.path[:1] not in ([cwd], [""]):
        sys.path.insert(0, cwd)


def _agents_in(module: object) -> str:
    found = sorted(
        name
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, AgentWorkflow) and _is_workflow_defn(value)
    )
    return f" (agents there: {', '.join(found)})" if found else ""


def _is_workflow_defn(cls: type) -> bool:
    defn = getattr(cls, "__temporal_workflow_definition", None)
    # The definition is inherited as a class attribute, so a subclass that forgot
    # the decorator would otherwise pass as its parent. Dynamic workflows have no name.
    return getattr(defn, "cls", None) is cls and workflow_type_name(cls) is not None


def _agent_type(agent: type[AgentWorkflow]) -> str:
    return workflow_type_name(agent) or agent.__qualname__


def _has_async_complete(target: object) -> bool:
    return inspect.iscoroutinefunction(getattr(target, "complete", None))


def _describe(target: object) -> str:
    if isinstance(target, type):
        return f"the class {target.__module__}.{target.__qualname__}"
    return f"a {type(target).__name__}"


def _signal_name(stopped_by: list[signal.Signals]) -> str | None:
    return stopped_by[0].name if stopped_by else None
