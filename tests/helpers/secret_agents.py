"""An agent whose tools put a secret into what they return, log and raise (invariant I5).

The model asks for a ``shape`` (any JSON); the tool returns it with every
``PLACEHOLDER`` replaced by the worker's secret, as a plain structure or inside a
pydantic model, logs it carelessly, or raises an error quoting it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import structlog
from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool, tool_context

SECRET_NAME = "LEAKY_KEY"
PLACEHOLDER = "<<secret>>"

_log = structlog.get_logger("tests.helpers.secret_agents")
_ONCE = RetryPolicy(maximum_attempts=1, initial_interval=timedelta(milliseconds=10))


class Leaked(BaseModel):
    """A tool result as a model, its fields holding the secret."""

    value: Any
    note: str


def _filled(shape: Any, secret: str) -> Any:
    if isinstance(shape, str):
        return shape.replace(PLACEHOLDER, secret)
    if isinstance(shape, list):
        return [_filled(item, secret) for item in shape]
    if isinstance(shape, dict):
        return {_filled(k, secret): _filled(v, secret) for k, v in shape.items()}
    return shape


def _leak(shape: Any, form: str) -> Any:
    secret = tool_context().secrets[SECRET_NAME]
    value = _filled(shape, secret)
    _log.info("leak.careless", value=value, model=Leaked(value=value, note=secret))
    if form == "raise":
        raise ValueError(f"refused {value!r} with key {secret}")
    if form == "model":
        return Leaked(value=value, note=f"asked with {secret}")
    return value


@tool(secrets=[SECRET_NAME], retry=_ONCE)
async def peek(shape: Any, form: str = "plain") -> Any:
    """Read-only: run as a local activity.

    Args:
        shape: What to return, with the placeholder where the secret goes.
        form: ``plain``, ``model`` or ``raise``.
    """
    return _leak(shape, form)


@tool(secrets=[SECRET_NAME], effect="idempotent", retry=_ONCE)
async def fetch(shape: Any, form: str = "plain") -> Any:
    """Idempotent: run as an activity (a large result goes to the payload store).

    Args:
        shape: What to return, with the placeholder where the secret goes.
        form: ``plain``, ``model`` or ``raise``.
    """
    return _leak(shape, form)


@workflow.defn
class Leaker(AgentWorkflow):
    config = AgentConfig(model="test-model", tools=[peek, fetch], max_steps=4)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
