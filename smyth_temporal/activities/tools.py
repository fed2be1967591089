"""The activity that runs one tool call on a worker, and its reconcile hook's.

Every tool gets its own activity type (``smyth.tool.<name>``) so each has its own
timeouts, retry policy and metrics, and shows up by name in the Temporal UI. A tool
with a ``reconcile`` hook also gets ``smyth.reconcile.<name>``, which a rewound run asks
before repeating a call the rewind could not undo.

A retry of such a tool's activity (attempt 2 or later) asks the hook first, inside the
same activity: the workflow never sees Temporal's retries, so only the attempt itself
can tell that an earlier one may have acted (its worker died or its heartbeat timed
out; a side-effect tool's own exceptions are final and never retried). ``done`` returns
the reused result, ``not_done`` runs the tool, ``unknown`` fails the activity
non-retryably as ``RECONCILE_UNKNOWN`` and the workflow asks a person.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import pydantic
import pydantic_core
import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from smyth_temporal._redaction import redact, redact_value
from smyth_temporal.activities._heartbeat import auto_heartbeat
from smyth_temporal.activities._telemetry import tool_called
from smyth_temporal.exceptions import (
    ConfigurationError,
    ToolArgumentsError,
    ToolDefinitionError,
    application_error,
)
from smyth_temporal.security import Secrets
from smyth_temporal.tools import (
    ACTIVITY_EXECUTOR,
    RECONCILE_UNKNOWN,
    Reconciled,
    ReconcileFunction,
    Tool,
    ToolContext,
    run_blocking,
    serving_tool_call,
)
from smyth_temporal.types.tools import ToolInvocation, ToolOutcome

__all__ = ["render_output", "tool_activities"]

_log = structlog.get_logger("smyth_temporal.tools")


def render_output(value: Any, max_chars: int) -> ToolOutcome:
    """Render a tool's return value as text for the model, bounded in size.

    Args:
        value: What the tool returned.
        max_chars: The most characters to keep.

    Returns:
        The text, every secret value this worker resolved masked as
        ``[secret:NAME]``, truncated with a note when it was longer than ``max_chars``.
    """
    if isinstance(value, str):
        text = value
    else:
        # Masked before serializing: JSON escapes a secret's quotes and backslashes,
        # and the text would no longer hold the value ``redact`` looks for.
        plain = pydantic_core.to_jsonable_python(value, fallback=str)
        text = pydantic_core.to_json(redact_value(plain), fallback=str).decode()
    # Masked before bounding: a secret cut by the truncation would leak its start.
    text = redact(text)
    if len(text) <= max_chars:
        return ToolOutcome(content=text)
    note = f"\n[output truncated: showing the first {max_chars} of {len(text)} characters]"
    return ToolOutcome(content=text[:max_chars] + note, truncated=True)


def _context(spec: Tool, invocation: ToolInvocation, secrets: Secrets) -> ToolContext:
    info = activity.info()
    return ToolContext(
        tool_name=spec.name,
        call_id=invocation.call_id,
        idempotency_key=invocation.idempotency_key,
        agent=invocation.agent,
        workflow_id=info.workflow_id or "",
        run_id=info.workflow_run_id or "",
        step=invocation.step,
        tenant=invocation.tenant,
        attempt=info.attempt,
        secrets=_resolve(spec, secrets),
    )


async def reconcile_call(spec: Tool, invocation: ToolInvocation, secrets: Secrets) -> Reconciled:
    """Ask ``spec``'s reconcile hook about the call ``invocation`` names, on this worker.

    The hook gets ``invocation.idempotency_key`` and its arguments, and reads its
    secrets through ``tool_context()`` as the tool does. A ``done`` answer's result is
    rendered as the tool's output would be (masked, bounded), so what crosses back is
    the text the model sees.

    Raises:
        ApplicationError: The tool has no hook, or the hook returned something other
            than a ``Reconciled`` (non-retryable: a bug in the hook); what the hook
            raises is retried like any activity failure.

    Added in 0.10.0.
    """
    if spec.reconcile is None:
        raise ApplicationError(
            f"tool '{spec.name}' has no reconcile hook",
            type="ToolDefinitionError",
            non_retryable=True,
        )
    try:
        answer = await _ask_hook(spec, spec.reconcile, invocation, secrets)
    except ApplicationError as exc:
        raise _masked(exc) from None
    except Exception as exc:
        # Retryable: the system the hook asks may be back on the next attempt. Masked:
        # the error reaches history and, when the retries run out, an approver.
        raise ApplicationError(
            redact(f"{type(exc).__name__}: {exc}"), type=type(exc).__name__
        ) from None
    if not isinstance(answer, Reconciled):
        raise ApplicationError(
            f"the reconcile hook of tool '{spec.name}' returned {type(answer).__name__}; "
            "it must return Reconciled.done(result), .not_done() or .unknown(reason)",
            type="ToolDefinitionError",
            non_retryable=True,
        )
    _log.info(
        "tool.reconciled",
        tool=spec.name,
        key=invocation.idempotency_key,
        outcome=answer.outcome,
    )
    if answer.outcome == "done":
        return answer.model_copy(
            update={"result": render_output(answer.result, spec.max_output_chars).content}
        )
    # The reason reaches an approval request (history, notifications): masked too.
    return answer.model_copy(update={"reason": redact(answer.reason)} if answer.reason else {})


async def _ask_hook(
    spec: Tool, hook: ReconcileFunction, invocation: ToolInvocation, secrets: Secrets
) -> object:
    with serving_tool_call(_context(spec, invocation, secrets)):
        async with auto_heartbeat():
            arguments = dict(invocation.arguments)
            if inspect.iscoroutinefunction(hook):
                answer: object = await hook(invocation.idempotency_key, arguments)
            else:
                # A plain ``def`` hook runs in a thread, as a plain ``def`` tool does.
                answer = await run_blocking(hook, invocation.idempotency_key, arguments)
            if inspect.isawaitable(answer):
                answer = await answer
    return answer


def _make_reconcile_activity(spec: Tool, secrets: Secrets) -> Callable[[ToolInvocation], Any]:
    @activity.defn(name=spec.reconcile_activity_name)
    async def reconcile_tool(invocation: ToolInvocation) -> Reconciled:
        return await reconcile_call(spec, invocation, secrets)

    reconcile_tool.__name__ = reconcile_tool.__qualname__ = f"reconcile_tool_{spec.name}"
    return reconcile_tool


async def _reconciled_retry(
    spec: Tool, invocation: ToolInvocation, secrets: Secrets
) -> ToolOutcome | None:
    """On a retry that may follow an attempt that acted: the reused outcome, if any.

    ``None``: run the tool (a first attempt, no hook, or the hook says ``not_done``).

    Raises:
        ApplicationError: ``RECONCILE_UNKNOWN``, non-retryable: the hook cannot tell.
    """
    if spec.reconcile is None or activity.info().attempt <= 1:
        return None
    answer = await reconcile_call(spec, invocation, secrets)
    if answer.outcome == "done":
        return ToolOutcome(content=str(answer.result))
    if answer.outcome == "unknown":
        raise ApplicationError(
            redact(f"the outcome of an earlier attempt is unknown: {answer.reason}"),
            answer.reason or "",
            type=RECONCILE_UNKNOWN,
            non_retryable=True,
        )
    return None


def _make_activity(spec: Tool, secrets: Secrets) -> Callable[[ToolInvocation], Any]:
    @activity.defn(name=spec.activity_name)
    async def run_tool(invocation: ToolInvocation) -> ToolOutcome:
        info = activity.info()
        reused = await _reconciled_retry(spec, invocation, secrets)
        if reused is not None:
            return reused
        context = _context(spec, invocation, secrets)
        log = _log.bind(
            tool=spec.name,
            workflow_id=context.workflow_id,
            step=invocation.step,
            call_id=invocation.call_id,
            attempt=info.attempt,
        )
        try:
            kwargs = spec.bind_arguments(invocation.arguments)
        except pydantic.ValidationError as exc:
            # The workflow validated these already; reaching here means the tool's
            # signature changed under a running agent. Retrying cannot help.
            raise application_error(
                ToolArgumentsError(f"arguments no longer fit tool '{spec.name}': {exc}")
            ) from exc
        started, status = time.monotonic(), "error"
        try:
            with serving_tool_call(context):
                async with auto_heartbeat():
                    # A plain ``def`` tool runs in a thread: the loop goes on heartbeating.
                    value = await spec(**kwargs)
            status = "ok"
        except ApplicationError as exc:
            raise _masked(exc) from None
        except Exception as exc:
            log.warning("tool.failed", error=repr(exc))
            # A side-effecting tool that raised may have done part of its effect:
            # repeating it blindly is the caller's decision, not ours.
            # Masked: an error quoting a secret would carry it to the model and history.
            raise ApplicationError(
                redact(f"{type(exc).__name__}: {exc}"),
                type=type(exc).__name__,
                non_retryable=spec.effect == "side_effect",
            ) from None
        finally:
            elapsed = timedelta(seconds=time.monotonic() - started)
            tool_called(invocation, effect=spec.effect, elapsed=elapsed, outcome=status)
        outcome = render_output(value, spec.max_output_chars)
        log.info("tool.completed", chars=len(outcome.content), truncated=outcome.truncated)
        return outcome

    run_tool.__name__ = run_tool.__qualname__ = f"run_tool_{spec.name}"
    return run_tool


def _masked(exc: ApplicationError) -> ApplicationError:
    """``exc`` as the tool raised it, its message and details masked of secret values."""
    return ApplicationError(
        redact(exc.message),
        *redact_value(list(exc.details)),
        type=exc.type,
        non_retryable=exc.non_retryable,
        next_retry_delay=exc.next_retry_delay,
        category=exc.category,
    )


def _resolve(spec: Tool, secrets: Secrets) -> dict[str, str]:
    try:
        return secrets.values(spec.secrets)
    except ConfigurationError as exc:
        # A worker without the secret cannot serve the call; another worker may have it.
        raise ApplicationError(str(exc), type="ConfigurationError") from None


def tool_activities(
    tools: Iterable[Tool], secrets: Secrets | None = None
) -> list[Callable[..., Any]]:
    """The activities to register on a worker for these tools (one per distinct name).

    Args:
        tools: The tools.
        secrets: What resolves the secrets tools declare (default: the environment).
    """
    seen: dict[str, Tool] = {}
    for spec in tools:
        if spec.executor != ACTIVITY_EXECUTOR:
            continue  # run by the agent runtime (built-ins) or another executor
        other = seen.setdefault(spec.name, spec)
        if other.fn is not spec.fn:
            raise ToolDefinitionError(
                f"two different tools are named {spec.name!r}: {other.fn.__qualname__} "
                f"and {spec.fn.__qualname__}; activity names must be unique on a worker"
            )
    resolver = secrets if secrets is not None else Secrets()
    activities = [_make_activity(spec, resolver) for spec in seen.values()]
    return activities + [
        _make_reconcile_activity(spec, resolver)
        for spec in seen.values()
        if spec.reconcile is not None
    ]
