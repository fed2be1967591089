"""The exceptions smyth-temporal raises, in one tree.

```
SmythError
├── UserError                    developer misuse, found before or while wiring things up
│   ├── ToolDefinitionError      a @tool function that cannot become a tool
│   └── ConfigurationError       invalid settings (addresses, task queue, model provider)
├── RunError                     a run failed, raised in workflow or activity code
│   ├── ModelError               the model provider failed (raised in the model activity)
│   │   └── ModelHTTPError       the endpoint answered with an HTTP error status
│   ├── ApprovalExpiredError     an approval with ``on_timeout="fail"`` got no decision
│   ├── AgentInterruptedError    an interrupt stopped the turn (think/act raise it)
│   ├── ToolCallError            a tool call failed; the model is told (the run goes on)
│   │   └── ToolArgumentsError   the model's arguments do not fit the tool's schema
│   ├── MCPServerError           an MCP server could not be reached, or broke the protocol
│   ├── MemoryNotFoundError      no memory with that id in the caller's scope
│   └── BudgetExceededError      the tenant's budget refused a model call
├── PayloadDecryptionError       a sealed payload was altered, moved, or its key is missing
└── ClientError                  raised by AgentClient and the CLI
    ├── ServerUnavailableError   no Temporal server answers at the address
    ├── AgentNotFoundError       no agent run with that workflow id
    ├── UnknownAgentError        no agent class by that name is known to the caller
    ├── ForkError                a run cannot be forked at that step
    ├── RewindError              a run cannot be rewound to that step (nothing was reset)
    ├── AgentFailedError         the run ended failed, terminated, cancelled or timed out
    ├── InvalidDecisionError     the agent refused an approval decision (unknown id, ...)
    ├── InvalidMessageError      a session refused a message (wrong tenant, empty, ...)
    ├── InvalidInterruptError    the agent refused an interrupt (nothing is running)
    ├── ScheduleNotFoundError    no schedule with that id
    ├── ScheduleExistsError      a schedule with that id exists already
    ├── AccessDeniedError        the caller's API key does not permit this
    ├── AgentPausedError         the run is paused: it answers no query until resumed
    └── PauseUnavailableError    the server cannot pause workflows (or has it off)
```

Run outcomes that an agent can handle (a tool failing, bad tool arguments, the step
limit) are not exceptions: they are reported to the model as tool results, or as the
``status`` of an ``AgentResult``.

Errors cross Temporal as ``ApplicationError``s whose ``type`` is one of the class names
above (or, for transport failures of the model endpoint, ``ModelTimeout`` and
``ModelConnectionError``, both retryable), so a failure seen in the workflow, in
history or by a client is classified the same way as where it was raised.
``application_error`` makes one from an exception of the tree; ``error_type`` finds
the class again from a failure's ``type``. ``SmythPlugin`` lists ``UserError`` and
``RunError`` as workflow failure types: raised in workflow code they fail the run
with their message instead of retrying the workflow task forever.

``InvalidDecisionError``, ``InvalidMessageError`` and ``InvalidInterruptError`` are
raised by the agent's update validators too (refusing the update before anything
enters history) and re-raised by the client with the same class.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

__all__ = [
    "AccessDeniedError",
    "AgentFailedError",
    "AgentInterruptedError",
    "AgentNotFoundError",
    "AgentPausedError",
    "ApprovalExpiredError",
    "BudgetExceededError",
    "ClientError",
    "ConfigurationError",
    "ForkError",
    "InvalidDecisionError",
    "InvalidInterruptError",
    "InvalidMessageError",
    "MCPServerError",
    "MemoryNotFoundError",
    "ModelError",
    "ModelHTTPError",
    "PauseUnavailableError",
    "PayloadDecryptionError",
    "RewindError",
    "RunError",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "ServerUnavailableError",
    "SmythError",
    "ToolArgumentsError",
    "ToolCallError",
    "ToolDefinitionError",
    "UnknownAgentError",
    "UserError",
    "application_error",
    "error_type",
]


class SmythError(Exception):
    """Base class of every error smyth-temporal raises."""


class UserError(SmythError):
    """The SDK was used in a way it does not support; fix the code or configuration."""


class ToolDefinitionError(UserError):
    """A function given to ``@tool`` cannot become a tool (not async, untyped, ...)."""


class ConfigurationError(UserError):
    """A setting is missing or invalid (addresses, task queue, model provider, ...)."""


class RunError(SmythError):
    """A run failed (or refused to go on); raised in workflow or activity code.

    Added in 0.3.0.
    """


class ModelError(RunError):
    """The model provider failed to answer.

    Attributes:
        retryable: Whether trying the same request again may succeed.
    """

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ModelHTTPError(ModelError):
    """The model endpoint answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status the endpoint returned.
    """

    def __init__(self, message: str, *, status_code: int, retryable: bool) -> None:
        super().__init__(message, retryable=retryable)
        self.status_code = status_code


class ApprovalExpiredError(RunError):
    """An approval request whose tool says ``on_timeout="fail"`` got no decision in time.

    Added in 0.3.0 (before, a failure of type ``ApprovalExpired``).
    """


class AgentInterruptedError(RunError):
    """An interrupt stopped the agent's turn (raised by ``think`` and ``act``).

    ``run_agent`` and sessions handle it (a task ends ``interrupted``, a session answers
    its next message); a custom loop may catch it to do the same.

    Added in 0.3.0.
    """


class ToolCallError(RunError):
    """A tool call failed; ``call_tool`` reports the message to the model as its result.

    Raised by the executors that run tool calls (see ``smyth_temporal.agent.tooling``);
    it never ends a run.

    Added in 0.3.0.
    """


class ToolArgumentsError(ToolCallError, ValueError):
    """The model's arguments for a tool are not valid JSON or do not fit its schema.

    Also a ``ValueError``, as it was before 0.3.0.
    """


class MCPServerError(RunError):
    """An MCP server could not be reached, failed, or answered outside the protocol.

    Raised on the worker (and carried as an ``ApplicationError`` of this type, retryable
    or not as the failure allows); a tool call that still fails is reported to the
    model, while a server whose tools cannot be listed fails the run.

    Added in 0.3.0.
    """


class MemoryNotFoundError(RunError):
    """No memory with the given id exists in the caller's tenant and namespace.

    Added in 0.3.0 (before, a failure of type ``MemoryNotFound``).
    """


class BudgetExceededError(RunError):
    """The tenant's budget refused a model call (the run ends ``over_budget``).

    Added in 0.5.0.
    """


class PayloadDecryptionError(SmythError):
    """An encrypted payload cannot be decrypted: tampered with, or its key is missing.

    Raised while decoding, never answered with plaintext: a payload whose ciphertext
    or authenticated metadata changed, or that was moved to another namespace, fails
    authentication; one sealed with a key this process lacks names the key id. In a
    worker the workflow task fails and Temporal retries it, so nothing is lost once
    the right key is configured.

    Added in 0.4.0.
    """


class ClientError(SmythError):
    """An operation of ``AgentClient`` or the CLI could not be carried out."""


class ServerUnavailableError(ClientError):
    """No Temporal server answers at the configured address."""


class AgentNotFoundError(ClientError):
    """No agent run exists with the given workflow id."""


class ForkError(ClientError):
    """A run cannot be forked at that step: beyond the run, or in the middle of the step.

    Added in 0.9.0.
    """


class RewindError(ClientError):
    """A run cannot be rewound to that step; nothing was reset.

    Added in 0.10.0.
    """


class UnknownAgentError(ClientError):
    """No agent class by that name is known (import path or registered name)."""


class AgentFailedError(ClientError):
    """The agent's run ended without a result (failed, terminated, cancelled, timed out)."""


class InvalidDecisionError(ClientError):
    """The agent refused an approval decision; the message says why.

    Unknown or already decided request ids, an ``arguments_sha256`` that does not
    match, edited arguments that do not fit the tool, or an ambiguous decision. The
    refusal leaves no trace in the agent's history.
    """


class InvalidMessageError(ClientError):
    """A session refused a message; the message says why.

    Another tenant's session, an empty or oversized message, a closed session, or a
    run that is not a session. The refusal leaves no trace in the session's history.

    Added in 0.2.0.
    """


class InvalidInterruptError(ClientError):
    """The agent refused an interrupt: nothing is running (finished, idle or sleeping).

    Added in 0.3.0.
    """


class ScheduleNotFoundError(ClientError):
    """No schedule exists with the given id.

    Added in 0.2.0.
    """


class ScheduleExistsError(ClientError):
    """A schedule with the given id exists already (ids are unique in a namespace).

    Added in 0.2.0.
    """


class AccessDeniedError(ClientError):
    """The caller's API key does not permit this: its role, its tenant, or the key itself.

    A run, approval, session or memory of another tenant is never the reason: those
    look exactly like ones that do not exist (``AgentNotFoundError``), so a key cannot
    learn they exist.

    Added in 0.4.0.
    """


class AgentPausedError(ClientError):
    """The agent run is paused (Workflow Pause): it answers no query until resumed.

    Added in 0.5.0.
    """


class PauseUnavailableError(ClientError):
    """The Temporal server cannot pause workflows: too old, or Workflow Pause is off.

    Added in 0.5.0.
    """


def application_error(exc: SmythError, *, non_retryable: bool = True) -> ApplicationError:
    """The ``ApplicationError`` that carries ``exc`` across Temporal (type = class name).

    Added in 0.3.0.
    """
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=non_retryable)


def error_type(name: str | None) -> type[SmythError] | None:
    """The class of this tree named by a failure's ``type``, or ``None``.

    Added in 0.3.0.
    """
    if not name:
        return None
    found = globals().get(name)
    return found if isinstance(found, type) and issubclass(found, SmythError) else None
