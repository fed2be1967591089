"""The model activity: one chat-completions call per agent step."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError

from smyth_temporal.activities._budget import BudgetGuard
from smyth_temporal.activities._heartbeat import auto_heartbeat
from smyth_temporal.activities._stream import streaming_deltas
from smyth_temporal.activities._telemetry import model_called
from smyth_temporal.activities.recorded import RecordedTurns, replayed
from smyth_temporal.exceptions import ConfigurationError, ModelError, ModelHTTPError
from smyth_temporal.models import ModelProvider, StreamingModelProvider
from smyth_temporal.types.budget import PriceTable
from smyth_temporal.types.model import (
    MODEL_ACTIVITY,
    OVERLOADED_ERROR,
    ModelRequest,
    ModelResponse,
    is_overloaded,
)

__all__ = ["ModelActivities"]

_log = structlog.get_logger("smyth_temporal.model")


class ModelActivities:
    """Holds the worker's model provider and serves the model activity.

    Added in 0.1.0.
    """

    def __init__(self, provider: ModelProvider, prices: PriceTable | None = None) -> None:
        """Serve model calls with ``provider``, priced by ``prices`` (default: none).

        Changed in 0.5.0: ``prices``; a priced call keeps within its tenant's budget.
        """
        self._provider = provider
        self._budget = BudgetGuard(prices or PriceTable(), provider)
        self._recorded = RecordedTurns()

    @activity.defn(name=MODEL_ACTIVITY)
    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Ask the provider for the next assistant message.

        Errors leave as ``ApplicationError``s classified retryable or not, so that
        Temporal's retry policy is the only thing that retries.
        """
        info = activity.info()
        log = _log.bind(
            workflow_id=info.workflow_id,
            agent=request.agent,
            step=request.step,
            model=request.model,
            attempt=info.attempt,
        )
        if request.replay_from is not None:
            recorded = await self._recorded_answer(request, log)
            if recorded is not None:
                return recorded
        reserved = await self._budget.reserve(request)
        try:
            response = await self._call(request, log)
        except BaseException:
            if reserved is not None:
                # Shielded: a cancelled call (an interrupt) still gives its share back.
                await asyncio.shield(self._budget.release(request.tenant, reserved))
            raise
        cost = self._budget.cost(request, response.model, response.usage)
        response = response.model_copy(
            update={"usage": response.usage.model_copy(update={"cost": cost})}
        )
        if reserved is not None:
            await self._budget.commit(request.tenant, reserved, cost)
        log.info(
            "model.completed",
            tool_calls=len(response.message.tool_calls),
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cost=cost,
        )
        model_called(request, response)
        return response

    async def _recorded_answer(self, request: ModelRequest, log: Any) -> ModelResponse | None:
        """The parent's recorded answer to this very request (a fork's replayed turn).

        ``None`` sends the request to the model: no recorded request equals it, or the
        record cannot be read (the parent's history is gone, or this worker cannot
        decode it). Replaying only ever saves a call, it never fails one.
        """
        source = request.replay_from
        assert source is not None
        try:
            async with auto_heartbeat():  # a long parent's history takes a while to read
                recorded = await self._recorded.answer(
                    activity.client(), request, asker=activity.info().workflow_id or ""
                )
        except Exception as exc:  # any failure to read the record: pay for the call
            log.warning("model.replay_unavailable", parent=source.workflow_id, error=str(exc))
            return None
        if recorded is None:
            log.info("model.replay_missed", parent=source.workflow_id)
            return None
        log.info(
            "model.replayed",
            parent=source.workflow_id,
            saved_cost=recorded.usage.cost,
            saved_input_tokens=recorded.usage.input_tokens,
            saved_output_tokens=recorded.usage.output_tokens,
        )
        return replayed(recorded)

    async def _call(self, request: ModelRequest, log: Any) -> ModelResponse:
        """The provider's answer, its errors classified retryable or not."""
        try:
            async with auto_heartbeat():
                return await self._answer(request)
        except ApplicationError as exc:
            final = _overloaded_for_good(request, exc)
            if final is not None:
                log.warning("model.failed", error=str(exc), retryable=False, fallback=True)
                raise final from exc
            log.warning("model.failed", error=str(exc), retryable=not exc.non_retryable)
            raise
        except ModelError as exc:
            log.warning("model.failed", error=str(exc), retryable=exc.retryable)
            details = [{"status_code": exc.status_code}] if isinstance(exc, ModelHTTPError) else []
            error = ApplicationError(
                str(exc), *details, type=type(exc).__name__, non_retryable=not exc.retryable
            )
            raise (_overloaded_for_good(request, error) or error) from exc
        except ConfigurationError as exc:
            # A worker that cannot serve this model will not learn to by retrying.
            raise ApplicationError(str(exc), type="ConfigurationError", non_retryable=True) from exc

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        provider = self._provider
        if request.stream_id is None or not isinstance(provider, StreamingModelProvider):
            return await provider.complete(request)
        async with streaming_deltas(request.stream_id, request.step, request.live) as deltas:
            return await provider.stream(request, deltas.add)


def _overloaded_for_good(request: ModelRequest, error: ApplicationError) -> ApplicationError | None:
    """``error`` as a final ``ModelOverloaded`` when the agent has a model to fall back on.

    The workflow asks for it (``overloaded_after``) only while a fallback model is
    left; from that attempt on, another retry of an overloaded endpoint would only
    delay the fallback, so the call fails for good and the workflow moves on.
    """
    after = request.overloaded_after
    if after is None or activity.info().attempt < after:
        return None
    if not is_overloaded(error.type, error.details):
        return None
    return ApplicationError(
        error.message, *error.details, type=OVERLOADED_ERROR, non_retryable=True
    )
