"""A2A tasks as views of agent runs: ids, states, messages, artifacts and decisions.

Pure translation, no I/O: ``_a2a_handler`` reads the run from Temporal and hands what
it read here. A task is one run of the agent (its id is the workflow id); the run's
``session_id`` carries the A2A ``contextId``.

The task id is derived from the caller's tenant, the agent and the message's
``messageId`` (``task_id_for``), so a client that sends the same message again (a
retry after a lost answer, a worker that crashed after sending) reaches the same task
instead of starting a second run: A2A says a ``messageId`` identifies a message, and
this makes the gateway deduplicate on it.

A pending approval is the task's ``input-required`` state: the status message names
the request and carries it as a data part (``approval_request``: id, tool, arguments,
``arguments_sha256``). The client answers with a message in the same task (its
``taskId``) carrying a data part ``{"decision": {"approved": ..., "arguments_sha256":
..., "comment": ..., "request_id": ...}}``, the gateway's ``Decision`` plus the request
it answers (optional while only one is pending).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict
from pydantic import ValidationError
from temporalio.client import WorkflowExecutionStatus

from smyth_temporal.gateway._models import Decision
from smyth_temporal.types.agent import AgentResult, AgentState, AgentStatus
from smyth_temporal.types.approvals import ApprovalRequest

try:
    from a2a.types.a2a_pb2 import (
        Artifact,
        Message,
        Part,
        Role,
        Task,
        TaskState,
        TaskStatus,
    )
    from a2a.utils.errors import InvalidParamsError
except ImportError as exc:  # pragma: no cover - the a2a extra brings it
    raise ImportError(
        "the gateway's A2A endpoint needs a2a-sdk: pip install 'smyth-temporal[a2a]'"
    ) from exc

__all__ = [
    "ANSWER_ARTIFACT",
    "DATA_ARTIFACT",
    "TASK_ID_PREFIX",
    "decision_of",
    "ended_task",
    "finished_task",
    "listed_task",
    "message_text",
    "new_context_id",
    "state_of",
    "submitted_task",
    "task_id_for",
    "task_of",
]

TASK_ID_PREFIX = "a2a-"
"""What the workflow ids of tasks started over A2A begin with."""
ANSWER_ARTIFACT = "answer"
"""The artifact holding the agent's final answer as text."""
DATA_ARTIFACT = "output"
"""The artifact holding a typed output (``AgentConfig(output_type=...)``) as data."""

_FAILED: frozenset[AgentStatus] = frozenset(
    {"failed", "max_steps", "invalid_output", "over_budget"}
)
_ENDED = {
    WorkflowExecutionStatus.FAILED: TaskState.TASK_STATE_FAILED,
    WorkflowExecutionStatus.TERMINATED: TaskState.TASK_STATE_FAILED,
    WorkflowExecutionStatus.TIMED_OUT: TaskState.TASK_STATE_FAILED,
    WorkflowExecutionStatus.CANCELED: TaskState.TASK_STATE_CANCELED,
}


def task_id_for(tenant: str, agent: str, message_id: str) -> str:
    """The task (workflow) id a message starts: the same message always names the same task.

    Hashed so a client's ``messageId`` (any string) makes a workflow id of fixed length
    and alphabet, and so one tenant cannot aim at another's id space.
    """
    digest = hashlib.sha256(f"{tenant}\0{agent}\0{message_id}".encode()).hexdigest()[:32]
    return f"{TASK_ID_PREFIX}{agent}-{digest}"


def new_context_id() -> str:
    """A fresh ``contextId`` for a message that names none."""
    return uuid.uuid4().hex


def message_text(message: Message) -> str:
    """The message's text parts, joined by blank lines."""
    return "\n\n".join(part.text for part in message.parts if part.HasField("text"))


def decision_of(message: Message) -> tuple[str | None, Decision]:
    """The decision a message in an ``input-required`` task carries, and the request it names.

    Raises:
        InvalidParamsError: No ``decision`` data part, or one the gateway's
            ``Decision`` refuses (approving needs ``arguments_sha256``).
    """
    for part in message.parts:
        if not part.HasField("data"):
            continue
        data = MessageToDict(part.data)
        if isinstance(data, dict) and isinstance(data.get("decision"), dict):
            fields: dict[str, Any] = dict(data["decision"])
            request_id = fields.pop("request_id", None)
            try:
                return (str(request_id) if request_id else None), Decision.model_validate(fields)
            except ValidationError as exc:
                reason = "; ".join(e["msg"] for e in exc.errors())
                raise InvalidParamsError(f"invalid decision: {reason}") from None
    raise InvalidParamsError(
        "this task waits for an approval: answer with a data part "
        '{"decision": {"approved": true, "arguments_sha256": "..."}} in a message with its taskId'
    )


def state_of(status: AgentStatus) -> TaskState:
    """The A2A task state of an agent status."""
    if status == "completed":
        return TaskState.TASK_STATE_COMPLETED
    if status in _FAILED:
        return TaskState.TASK_STATE_FAILED
    if status == "interrupted":
        return TaskState.TASK_STATE_CANCELED
    if status == "awaiting_approval":
        return TaskState.TASK_STATE_INPUT_REQUIRED
    return TaskState.TASK_STATE_WORKING


def _agent_message(task_id: str, context_id: str, text: str, **data: Any) -> Message:
    message = Message(
        message_id=f"{task_id}-{hashlib.sha256(text.encode()).hexdigest()[:12]}",
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=[Part(text=text)],
    )
    if data:
        part = Part(media_type="application/json")
        ParseDict(data, part.data)
        message.parts.append(part)
    return message


def _pending(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "tool": request.tool,
        "arguments": request.arguments,
        "arguments_sha256": request.arguments_sha256,
        "reason": request.reason,
    }


def task_of(
    state: AgentState, result: AgentResult | None = None, *, history_length: int | None = None
) -> Task:
    """The task ``state`` shows (with ``result``'s artifacts once the run completed)."""
    context_id = state.session_id or ""
    task = Task(id=state.workflow_id, context_id=context_id)
    task.status.CopyFrom(TaskStatus(state=state_of(state.status)))
    pending = [r for r in state.approvals if r.status == "pending"]
    if state.status == "awaiting_approval" and pending:
        names = ", ".join(f"{r.id} ({r.tool})" for r in pending)
        text = f"Waiting for approval: {names}. Answer with a decision data part."
        notice = _agent_message(
            state.workflow_id,
            context_id,
            text,
            approval_requests=[_pending(r) for r in pending],
        )
        task.status.message.CopyFrom(notice)
    elif task.status.state == TaskState.TASK_STATE_FAILED and state.output:
        task.status.message.CopyFrom(_agent_message(state.workflow_id, context_id, state.output))
    for message in state.messages:
        if message.role in ("user", "assistant") and message.content:
            role = Role.ROLE_USER if message.role == "user" else Role.ROLE_AGENT
            task.history.append(
                Message(
                    message_id=f"{state.workflow_id}-{len(task.history)}",
                    role=role,
                    task_id=state.workflow_id,
                    context_id=context_id,
                    parts=[Part(text=message.content)],
                )
            )
    if history_length is not None:
        keep = list(task.history)[-history_length:] if history_length > 0 else []
        del task.history[:]
        task.history.extend(keep)
    if task.status.state == TaskState.TASK_STATE_COMPLETED:
        task.artifacts.extend(artifacts_of(result, state.output))
    return task


def artifacts_of(result: AgentResult | None, output: str | None) -> list[Artifact]:
    """The answer as a text artifact, and a typed output as a data artifact."""
    text = result.output if result is not None else output
    artifacts = [Artifact(artifact_id=ANSWER_ARTIFACT, name=ANSWER_ARTIFACT)]
    artifacts[0].parts.append(Part(text=text or ""))
    if result is not None and result.data is not None:
        data = Artifact(artifact_id=DATA_ARTIFACT, name=DATA_ARTIFACT)
        part = Part(media_type="application/json")
        ParseDict(result.data, part.data)
        data.parts.append(part)
        artifacts.append(data)
    return artifacts


def submitted_task(task_id: str, context_id: str, message: Message) -> Task:
    """The task a message just started: working, its history the message."""
    task = Task(id=task_id, context_id=context_id)
    task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
    sent = Message()
    sent.CopyFrom(message)
    sent.task_id, sent.context_id = task_id, context_id
    task.history.append(sent)
    return task


def finished_task(submitted: Task, result: AgentResult) -> Task:
    """The task ``submitted`` once its run ended with ``result`` (no state to read)."""
    task = Task()
    task.CopyFrom(submitted)
    state = state_of(result.status)
    task.status.CopyFrom(TaskStatus(state=state))
    if state == TaskState.TASK_STATE_COMPLETED:
        task.history.append(_agent_message(task.id, task.context_id, result.output))
        task.artifacts.extend(artifacts_of(result, result.output))
    elif result.output:
        task.status.message.CopyFrom(_agent_message(task.id, task.context_id, result.output))
    return task


def ended_task(task_id: str, status: WorkflowExecutionStatus, why: str) -> Task | None:
    """The task of a run that ended without a result the agent wrote (failed, terminated)."""
    state = _ENDED.get(status)
    if state is None:
        return None
    task = Task(id=task_id)
    task.status.CopyFrom(TaskStatus(state=state))
    task.status.message.CopyFrom(_agent_message(task_id, "", why))
    return task


def listed_task(task_id: str, status: WorkflowExecutionStatus | None, why: str) -> Task:
    """The task of a listed run whose state could not be read: its state as listed, and why."""
    ended = ended_task(task_id, status, why) if status is not None else None
    if ended is not None:
        return ended
    task = Task(id=task_id)
    done = status == WorkflowExecutionStatus.COMPLETED
    task.status.CopyFrom(
        TaskStatus(state=TaskState.TASK_STATE_COMPLETED if done else TaskState.TASK_STATE_WORKING)
    )
    task.status.message.CopyFrom(_agent_message(task_id, "", why))
    return task
