"""Model providers (worker side): the interface, routing, and the OpenAI-compatible one.

Workflow code never imports this package; it sends ``ModelRequest``s to the model
activity by name.
"""

from smyth_temporal.models._activity import ModelActivities
from smyth_temporal.models._openai import OpenAIProvider
from smyth_temporal.models._provider import ModelProvider, ModelRouter
from smyth_temporal.types.model import ModelRequest, ModelResponse

__all__ = [
    "ModelActivities",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelRouter",
    "OpenAIProvider",
]
