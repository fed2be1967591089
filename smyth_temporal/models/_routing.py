"""One model string for every provider: ``anthropic:claude-sonnet-4-5``, ``openai:gpt-4o``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.models._provider import (
    ModelProvider,
    StreamingModelProvider,
    TextSink,
    reply_bound,
)
from smyth_temporal.settings import ModelSettings
from smyth_temporal.types.model import ModelRequest, ModelResponse

__all__ = ["ProviderFactory", "ProviderPrefixes", "default_provider"]

ProviderFactory = Callable[[], ModelProvider]
"""Builds a provider on its first call, so a worker needs only the keys it uses."""


class ProviderPrefixes:
    """Routes ``PREFIX:MODEL`` to the provider of ``PREFIX``, asking it for ``MODEL``.

    A name without a known prefix (``gpt-4o-mini``, ``llama3:8b``) goes to the default
    provider unchanged, as before prefixes existed. A provider given as a factory is
    built on the first request that names it; if it cannot be built (no key, the
    extra not installed) that request fails with a ``ConfigurationError``, final.

    Added in 0.10.0.
    """

    def __init__(
        self,
        default: ModelProvider | ProviderFactory,
        prefixes: Mapping[str, ModelProvider | ProviderFactory],
    ) -> None:
        self._default = default
        self._prefixes = dict(prefixes)
        self._built: dict[str, ModelProvider] = {}

    def resolve(self, model: str) -> tuple[ModelProvider, str]:
        """The provider for ``model`` and the name to ask it for.

        Raises:
            ConfigurationError: The provider cannot be built on this worker.
        """
        prefix, sep, name = model.partition(":")
        if sep and name and prefix in self._prefixes:
            return self._provider(prefix, self._prefixes[prefix]), name
        return self._provider("", self._default), model

    def reply_bound(self, request: ModelRequest) -> int | None:
        """The reply bound of the provider the model's prefix names (if it says)."""
        provider, name = self.resolve(request.model)
        return reply_bound(provider, _renamed(request, name))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the provider the model's prefix names."""
        provider, name = self.resolve(request.model)
        return await provider.complete(_renamed(request, name))

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """Stream with the provider the model's prefix names (if it can stream)."""
        provider, name = self.resolve(request.model)
        request = _renamed(request, name)
        if isinstance(provider, StreamingModelProvider):
            return await provider.stream(request, on_text)
        response = await provider.complete(request)
        on_text(response.message.content or "")
        return response

    def _provider(self, key: str, given: ModelProvider | ProviderFactory) -> ModelProvider:
        if key in self._built:
            return self._built[key]
        # A class has a ``complete`` attribute too: it is a factory, not a provider.
        if isinstance(given, ModelProvider) and not isinstance(given, type):
            provider = given
        else:
            try:
                provider = given()
            except ImportError as exc:
                raise ConfigurationError(str(exc)) from exc
        self._built[key] = provider
        return provider


def _built_if_installed(factory: ProviderFactory) -> ModelProvider | ProviderFactory:
    """The provider, or its factory when its extra is not installed.

    A worker whose environment has a vendor's key for other programs (``GOOGLE_API_KEY``
    is common) still starts without that vendor's extra; only a call naming the
    vendor's models fails, with the install command.
    """
    try:
        return factory()
    except ImportError:
        return factory


def _renamed(request: ModelRequest, name: str) -> ModelRequest:
    return request if name == request.model else request.model_copy(update={"model": name})


def default_provider(settings: ModelSettings) -> ProviderPrefixes:
    """A worker's provider when none is named: OpenAI-compatible, the others by prefix.

    Bare names and ``openai:NAME`` go to the OpenAI-compatible provider
    (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), built now so that a worker without its
    key fails at start, unless the worker has only the keys of native providers;
    ``openai-responses:NAME`` goes to ``OpenAIResponsesProvider`` (the same endpoint
    and key, built when the OpenAI-compatible one is);
    ``anthropic:NAME`` goes to ``AnthropicProvider`` (``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_API_KEY``), built now if the key is set (else its first call fails,
    final, naming the variable); ``google:NAME`` goes to ``GoogleProvider`` the same
    way (``GOOGLE_GEMINI_BASE_URL``, ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``).

    Added in 0.10.0.
    """

    def openai_provider() -> ModelProvider:
        from smyth_temporal.models._openai import OpenAIProvider

        key = settings.openai_api_key
        return OpenAIProvider(
            base_url=settings.openai_base_url,
            api_key=key.get_secret_value() if key is not None else None,
        )

    def openai_responses_provider() -> ModelProvider:
        from smyth_temporal.models._openai_responses import OpenAIResponsesProvider

        key = settings.openai_api_key
        return OpenAIResponsesProvider(
            base_url=settings.openai_base_url,
            api_key=key.get_secret_value() if key is not None else None,
        )

    def anthropic_provider() -> ModelProvider:
        from smyth_temporal.models._anthropic import AnthropicProvider

        key = settings.anthropic_api_key
        return AnthropicProvider(
            base_url=settings.anthropic_base_url,
            api_key=key.get_secret_value() if key is not None else None,
        )

    def google_provider() -> ModelProvider:
        from smyth_temporal.models._google import GoogleProvider

        key = settings.google_api_key or settings.gemini_api_key
        return GoogleProvider(
            base_url=settings.google_base_url,
            api_key=key.get_secret_value() if key is not None else None,
        )

    has_anthropic = settings.anthropic_api_key is not None
    has_google = settings.google_api_key is not None or settings.gemini_api_key is not None
    only_native = settings.openai_api_key is None and (has_anthropic or has_google)
    openai = openai_provider if only_native else openai_provider()
    responses = openai_responses_provider if only_native else openai_responses_provider()
    # Built now when its key is set: importing the SDK inside the first model call would
    # hold the event loop long enough (seconds on a loaded worker) to miss heartbeats.
    anthropic = _built_if_installed(anthropic_provider) if has_anthropic else anthropic_provider
    google = _built_if_installed(google_provider) if has_google else google_provider
    return ProviderPrefixes(
        openai,
        {
            "openai": openai,
            "openai-responses": responses,
            "anthropic": anthropic,
            "google": google,
        },
    )
