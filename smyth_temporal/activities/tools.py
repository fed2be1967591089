"""The activity that runs one tool call on a worker.

Every tool gets its own activity type (``smyth.tool.<name>``) so each has its own
timeouts, retry policy and metrics, and shows up by name in the Temporal UI.
"""

from __future__ import annotations

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
from smyth_temporal.tools import ACTIVITY_EXECUTOR, Tool, ToolContext, serving_tool_call
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


def _make_activity(spec: Tool, secrets: Secrets) -> Callable[[ToolInvocation], Any]:
    @activity.defn(name=spec.activity_name)
    async def run_tool(invocation: ToolInvocation) -> ToolOutcome:
        info = activity.info()
        context = ToolContext(
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
    return [_make_activity(spec, resolver) for spec in seen.values()]
