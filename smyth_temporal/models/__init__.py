"""Model providers (worker side): routing, OpenAI (chat, Responses), Anthropic, Google.

Workflow code never imports this package; it sends ``ModelRequest``s to the model
activity by name. The OpenAI provider (and the ``openai`` package) loads on first use,
as does ``to_application_error``, the one map from a provider's HTTP errors to
retryable or final activity failures (the embedders use it too).
``load_price_table`` reads the prices budgets count spending with.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal.models._pricing import load_price_table
from smyth_temporal.models._provider import (
    ModelProvider,
    ModelRouter,
    StreamingModelProvider,
    TextSink,
    reply_bound,
)
from smyth_temporal.models._routing import ProviderPrefixes, default_provider
from smyth_temporal.types.model import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from smyth_temporal.models._anthropic import AnthropicProvider
    from smyth_temporal.models._errors import to_application_error
    from smyth_temporal.models._google import GoogleProvider
    from smyth_temporal.models._openai import OpenAIProvider
    from smyth_temporal.models._openai_responses import (
        OpenAIResponsesProvider,
        is_reasoning_model,
    )

__all__ = [
    "AnthropicProvider",
    "GoogleProvider",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelRouter",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "ProviderPrefixes",
    "StreamingModelProvider",
    "TextSink",
    "default_provider",
    "is_reasoning_model",
    "load_price_table",
    "reply_bound",
    "to_application_error",
]


def __getattr__(name: str) -> Any:
    if name == "AnthropicProvider":
        # Needs the anthropic extra; the import error names the install command.
        from smyth_temporal.models._anthropic import AnthropicProvider

        return AnthropicProvider
    if name == "GoogleProvider":
        # Needs the google extra; the import error names the install command.
        from smyth_temporal.models._google import GoogleProvider

        return GoogleProvider
    if name == "OpenAIProvider":
        from smyth_temporal.models._openai import OpenAIProvider

        return OpenAIProvider
    if name in ("OpenAIResponsesProvider", "is_reasoning_model"):
        from smyth_temporal.models import _openai_responses

        return getattr(_openai_responses, name)
    if name == "to_application_error":
        from smyth_temporal.models._errors import to_application_error

        return to_application_error
    raise AttributeError(name)
