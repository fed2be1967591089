"""One call to a remote A2A agent, inside a tool activity (the a2a-sdk's client).

The client's HTTP has no retries of its own (httpx makes none): the activity's retry
policy is the only one, so a retry is visible in history and bounded. Errors are
classified for it: the remote agent unreachable, a timeout, 429 or a 5xx is retried
(the next attempt sends the same ``messageId``, which a deduplicating server maps to
the same task); a refusal (401, 403, 404, a JSON-RPC error such as invalid params) is
not, and the model reads it as the tool's error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import structlog
from temporalio.exceptions import ApplicationError

try:
    from a2a.client import A2AClientError, A2AClientTimeoutError, ClientConfig, create_client
    from a2a.helpers import get_artifact_text, get_message_text
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, Task, TaskState
    from a2a.utils.errors import A2AError, InternalError
except ImportError as exc:
    raise ApplicationError(
        "a2a_agent needs a2a-sdk on the worker: pip install 'smyth-temporal[a2a]'",
        type="ConfigurationError",
        non_retryable=True,
    ) from exc

__all__ = ["call_remote"]

log = structlog.get_logger("smyth_temporal.a2a")

_RETRIED_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_ENDED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "was canceled",
    TaskState.TASK_STATE_REJECTED: "refused the task",
}


async def call_remote(
    url: str, text: str, *, message_id: str, key: str | None, timeout: timedelta
) -> str:
    """Send ``text`` as message ``message_id`` to the agent at ``url``; its answer.

    Raises:
        ApplicationError: The call failed; ``non_retryable`` unless another attempt
            may succeed (the remote agent unreachable, overloaded or failing).
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    message = Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)])
    seconds = timeout.total_seconds()
    async with httpx.AsyncClient(headers=headers, timeout=seconds) as http:
        try:
            config = ClientConfig(httpx_client=http, streaming=False)
            client = await create_client(url, client_config=config)
            responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
        except (A2AError, httpx.HTTPError) as exc:
            raise _classified(url, exc) from None
    for response in reversed(responses):
        if response.HasField("task"):
            return _answer(url, response.task)
        if response.HasField("message"):
            return get_message_text(response.message)
    raise ApplicationError(f"A2A agent {url}: no task or message in its answer", type="A2AError")


def _answer(url: str, task: Task) -> str:
    """The task's answer: its artifacts' text once completed; else why there is none."""
    state = task.status.state
    said = get_message_text(task.status.message) if task.status.HasField("message") else ""
    if state == TaskState.TASK_STATE_COMPLETED:
        texts = [get_artifact_text(a) for a in task.artifacts]
        return "\n\n".join(t for t in texts if t) or said
    if state in _ENDED:
        raise ApplicationError(
            f"A2A agent {url}: task {task.id} {_ENDED[state]}: {said}".rstrip(": "),
            type="A2ATaskFailed",
            non_retryable=True,
        )
    # input-required, auth-required, still working: the remote side decides; say so.
    return (
        f"The remote agent has not finished task {task.id} "
        f"({TaskState.Name(state).removeprefix('TASK_STATE_').lower()}): {said}"
    ).rstrip(": ")


def _classified(url: str, exc: BaseException) -> ApplicationError:
    retried = _retried(exc)
    log.warning("a2a.call_failed", url=url, error=str(exc), retried=retried)
    return ApplicationError(
        f"A2A agent {url}: {exc}",
        type="A2AUnavailable" if retried else "A2ARefused",
        non_retryable=not retried,
    )


def _retried(exc: BaseException) -> bool:
    """Whether another attempt may succeed (nothing the remote side refused for good)."""
    seen: Any = exc
    while seen is not None:
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code in _RETRIED_STATUSES
        if isinstance(seen, httpx.TransportError | A2AClientTimeoutError | InternalError):
            return True  # unreachable, cut off, timed out, or failing on its side
        seen = seen.__cause__
    return isinstance(exc, A2AClientError) and "Network" in str(exc)
