"""The model provider interface, and routing model names to providers."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.types.model import ModelRequest, ModelResponse

__all__ = ["ModelProvider", "ModelRouter"]


@runtime_checkable
class ModelProvider(Protocol):
    """Answers chat-completions requests; lives on the worker, never in workflow code.

    Implementations raise ``temporalio.exceptions.ApplicationError`` (or a
    ``ModelError``) with ``non_retryable`` set by whether a retry can help; they never
    retry themselves, Temporal does.

    Added in 0.1.0.
    """

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request."""
        ...


class ModelRouter:
    """Chooses a provider by model name, with shell-style patterns (``"gpt-*"``).

    Patterns are tried in the order given; ``"*"`` makes a default.

    Added in 0.1.0.
    """

    def __init__(self, routes: Mapping[str, ModelProvider]) -> None:
        if not routes:
            raise ConfigurationError("ModelRouter needs at least one route")
        self._routes = list(routes.items())

    def resolve(self, model: str) -> ModelProvider:
        """The provider for ``model``.

        Raises:
            ConfigurationError: No pattern matches the model name.
        """
        for pattern, provider in self._routes:
            if fnmatch.fnmatchcase(model, pattern):
                return provider
        patterns = ", ".join(pattern for pattern, _ in self._routes)
        raise ConfigurationError(f"no model provider on this worker serves {model!r} ({patterns})")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the provider that serves ``request.model``."""
        return await self.resolve(request.model).complete(request)
