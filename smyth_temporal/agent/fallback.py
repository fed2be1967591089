"""Fallback models: the models a model call may move through, and when it moves on.

Workflow code, shared by the agent's turns (``Loop``) and compaction's summary calls
(``Compactor``): a call goes to its model, then to each of ``AgentConfig.fallback_models``
in turn while the endpoint is overloaded or unavailable. Each model is its own
activity, so the history and the audit name every model a call went to.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.types.model import ModelRequest, is_overloaded

__all__ = ["SUMMARY_FALLBACK_PATCH", "fallback_chain", "moves_on"]

SUMMARY_FALLBACK_PATCH = "smyth-summary-fallback"
"""Marks runs whose overloaded summary calls may move to ``AgentConfig.fallback_models``."""


def fallback_chain(config: AgentConfig, request: ModelRequest, patch: str) -> list[ModelRequest]:
    """``request`` for each model it may go to, in order: its own, then the fallbacks.

    Every model but the last gives up after ``fallback_after_attempts`` overloaded
    attempts (``overloaded_after``), so the call moves on; the last keeps the retry
    policy's attempts. Without fallbacks the chain is ``[request]`` unchanged.

    Args:
        config: The agent's configuration (``fallback_models``, ``fallback_after_attempts``).
        request: The call, to its first model.
        patch: The patch that marks runs taking this path: only agents with fallbacks
            mark their history, so runs recorded before keep theirs.
    """
    models = [request.model]
    if config.fallback_models and workflow.patched(patch):
        models += [m for m in config.fallback_models if m != request.model]
    if len(models) == 1:
        return [request]
    last = len(models) - 1
    return [
        request.model_copy(
            update={
                "model": model,
                "overloaded_after": None if index == last else config.fallback_after_attempts,
            }
        )
        for index, model in enumerate(models)
    ]


def moves_on(exc: ActivityError) -> bool:
    """Whether a failed model call may move to the next model (overloaded or unavailable)."""
    reason = exc.cause or exc
    return isinstance(reason, ApplicationError) and is_overloaded(reason.type, reason.details)
