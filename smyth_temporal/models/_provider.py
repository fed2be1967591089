"""The model provider interface, and routing model names to providers."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.types.model import ModelRequest, ModelResponse

__all__ = [
    "BoundedReplies",
    "ModelProvider",
    "ModelRouter",
    "StreamingModelProvider",
    "TextSink",
    "reply_bound",
]

TextSink = Callable[[str], None]
"""Takes each piece of text as the model writes it (called in order, never concurrently)."""


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


@runtime_checkable
class StreamingModelProvider(ModelProvider, Protocol):
    """A provider that can also hand over the text while the model writes it.

    ``stream`` answers like ``complete`` (the same ``ModelResponse``, the whole
    message) and calls ``on_text`` with each piece of the assistant's text as it
    arrives; the pieces concatenate exactly to the message's ``content``. Tool-call
    arguments are not passed to ``on_text``. A failure mid-stream raises like
    ``complete`` does; the activity's retry then supersedes what was streamed.

    Added in 0.3.0.
    """

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Answer one request, streaming its text to ``on_text``."""
        ...


@runtime_checkable
class BoundedReplies(Protocol):
    """A provider that knows the most tokens it lets a reply hold.

    A budget reserves a call's likely cost before the call; a request that sets no
    ``max_tokens`` is bounded by what its provider sends instead (Anthropic's
    ``DEFAULT_MAX_TOKENS``, a Gemini model's own output limit), so the reservation asks
    the provider rather than assume a bound the call may pass. Providers without the
    method are assumed to stop at ``DEFAULT_OUTPUT_ESTIMATE`` reply tokens.

    Added in 0.10.0.
    """

    def reply_bound(self, request: ModelRequest) -> int | None:
        """The most reply tokens (thinking included) a call of ``request`` is billed.

        ``None``: the provider does not know.
        """
        ...


def reply_bound(provider: ModelProvider, request: ModelRequest) -> int | None:
    """``provider``'s reply bound for ``request``, ``None`` if it does not say.

    Never raises for a model the provider cannot serve: the call itself fails with
    the right error, and a guess is no reason to fail it earlier.
    """
    if not isinstance(provider, BoundedReplies):
        return None
    try:
        return provider.reply_bound(request)
    except ConfigurationError:  # a router that cannot serve the model
        return None


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

    def reply_bound(self, request: ModelRequest) -> int | None:
        """The reply bound of the provider that serves ``request.model`` (if it says)."""
        return reply_bound(self.resolve(request.model), request)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the provider that serves ``request.model``."""
        return await self.resolve(request.model).complete(request)

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Stream with the provider that serves ``request.model`` (if it can stream)."""
        provider = self.resolve(request.model)
        if isinstance(provider, StreamingModelProvider):
            return await provider.stream(request, on_text)
        response = await provider.complete(request)
        on_text(response.message.content or "")  # the whole text, as one piece
        return response
