"""Model providers (worker side): the interface, routing, and the OpenAI-compatible one.

Workflow code never imports this package; it sends ``ModelRequest``s to the model
activity by name. The OpenAI provider (and the ``openai`` package) loads on first use.
"""

from typing import TYPE_CHECKING, Any

from smyth_temporal.models._provider import (
    ModelProvider,
    ModelRouter,
    StreamingModelProvider,
    TextSink,
)
from smyth_temporal.types.model import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from smyth_temporal.models._openai import OpenAIProvider

__all__ = [
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelRouter",
    "OpenAIProvider",
    "StreamingModelProvider",
    "TextSink",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIProvider":
        from smyth_temporal.models._openai import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(name)
