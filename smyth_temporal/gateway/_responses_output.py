"""The Responses API's output: the response object, its items, and the events that tell it.

``Builder`` grows a response from a turn's items (``_turns``) and gives the Responses
events each one makes, so a streamed response and a whole one are the same object: the
stream's last event carries what the whole response holds. ``replay`` tells a response
known whole before it is streamed (a turn that went on after a decision).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from smyth_temporal.gateway._turns import (
    ShownText,
    TurnItem,
    TurnMessage,
    TurnPending,
    TurnText,
    TurnTool,
    pending_notice,
)
from smyth_temporal.types.approvals import ApprovalRequest
from smyth_temporal.types.messages import ToolCall, Usage
from smyth_temporal.types.sessions import SessionReply

__all__ = [
    "Builder",
    "ResponseObject",
    "approval_request",
    "function_call",
    "text_message",
    "usage_of",
]


class ResponseObject(BaseModel):
    """A response, in OpenAI's shape (``object: "response"``)."""

    model_config = ConfigDict(extra="allow")

    id: str
    object: Literal["response"] = "response"
    created_at: float
    status: Literal["completed", "incomplete", "in_progress", "cancelled", "failed"]
    model: str
    output: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, Any] | None = None
    incomplete_details: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    instructions: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    previous_response_id: str | None = None
    parallel_tool_calls: bool = False
    tool_choice: str = "auto"
    tools: list[dict[str, Any]] = Field(default_factory=list)
    text: dict[str, Any] = Field(default_factory=lambda: {"format": {"type": "text"}})


def usage_of(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def text_message(item_id: str, text: str, *, done: bool, final: bool | None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed" if done else "in_progress",
        "content": [{"type": "output_text", "text": text, "annotations": []}] if done else [],
    }
    if final is not None:
        message["phase"] = "final_answer" if final else "commentary"
    return message


def function_call(item_id: str, call: ToolCall, output: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
        "output": output,
    }


def approval_request(request: ApprovalRequest, server: str) -> dict[str, Any]:
    return {
        "type": "mcp_approval_request",
        "id": request.id,
        "name": request.tool,
        "arguments": json.dumps(request.arguments),
        "server_label": server,
    }


class Builder:
    """A response built from a turn's items, with the events that tell it as it grows.

    The streamed and the whole response are the same object: the stream's last event
    carries what ``response`` holds at the end.
    """

    def __init__(self, response: ResponseObject) -> None:
        self.response = response
        self._base = hashlib.sha256(response.id.encode()).hexdigest()[:16]
        self._sequence = 0
        self._open: dict[str, tuple[int, str]] = {}  # live message id -> (index, text)
        self._shown = ShownText()

    def start(self) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress``."""
        return [self._lifecycle("response.created"), self._lifecycle("response.in_progress")]

    def add(self, item: TurnItem) -> list[dict[str, Any]]:
        """The events ``item`` makes (also applied to ``response``)."""
        if isinstance(item, TurnText):
            return self._text(item.message_id, item.text, item.reset)
        if isinstance(item, TurnMessage):
            events = self._text(item.message_id, item.content, reset=True) if item.content else []
            return events + self._close(item.message_id, item.content, final=item.final)
        if isinstance(item, TurnTool):
            index = len(self.response.output)
            done = function_call(f"fc_{self._base}_{index}", item.call, item.content)
            return self._whole(done)
        if isinstance(item, TurnPending):
            return self._pending(item.request)
        return self._completed(item)

    def _text(self, message_id: str, text: str, reset: bool) -> list[dict[str, Any]]:
        events = []
        if message_id not in self._open:
            index = len(self.response.output)
            item_id = f"msg_{self._base}_{index}"
            added = text_message(item_id, "", done=False, final=None)
            self.response.output.append(added)
            self._open[message_id] = (index, "")
            part = {"type": "output_text", "text": "", "annotations": []}
            events += [
                self._event("response.output_item.added", output_index=index, item=added),
                self._event(
                    "response.content_part.added", **self._at(index), content_index=0, part=part
                ),
            ]
        index, _ = self._open[message_id]
        # A stream cannot take text back: a retried model call's text goes out only
        # where it differs from what was shown (the done events carry the true text).
        delta = self._shown.piece(message_id, text, reset)
        self._open[message_id] = (index, self._shown.text(message_id))
        if delta:
            events.append(
                self._event(
                    "response.output_text.delta",
                    **self._at(index),
                    content_index=0,
                    delta=delta,
                    logprobs=[],
                )
            )
        return events

    def _close(self, message_id: str, text: str, *, final: bool) -> list[dict[str, Any]]:
        if message_id not in self._open:
            return []  # a message of tool calls only: no text item
        index, _ = self._open.pop(message_id)
        item = text_message(self.response.output[index]["id"], text, done=True, final=final)
        self.response.output[index] = item
        at = {**self._at(index), "content_index": 0}
        return [
            self._event("response.output_text.done", **at, text=text, logprobs=[]),
            self._event("response.content_part.done", **at, part=item["content"][0]),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _close_open(self, message_id: str) -> list[dict[str, Any]]:
        """Close a message whose end never came, with the text it has."""
        return self._close(message_id, self._open[message_id][1], final=False)

    def _whole(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        index = len(self.response.output)
        self.response.output.append(item)
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _pending(self, request: ApprovalRequest) -> list[dict[str, Any]]:
        events = [e for m in list(self._open) for e in self._close_open(m)]
        notice = f"msg_{self._base}_{len(self.response.output)}"
        events += self._whole(text_message(notice, pending_notice(request), done=True, final=True))
        events += self._whole(approval_request(request, self.response.model))
        self.response.status = "incomplete"
        self.response.incomplete_details = {"reason": None}
        self.response.metadata = {**self.response.metadata, "smyth_pending": request.id}
        return [*events, self._lifecycle("response.incomplete")]

    def _completed(self, reply: SessionReply) -> list[dict[str, Any]]:
        events = [e for m in list(self._open) for e in self._close_open(m)]
        self.response.status = "completed"
        self.response.usage = usage_of(reply.turn_usage)
        return [*events, self._lifecycle("response.completed")]

    def replay(self) -> list[dict[str, Any]]:
        """The events of the response as it is now, from ``response.created`` to its end.

        For a response known whole before it is streamed: each item comes added and done.
        """
        final = self.response
        self.response = final.model_copy(update={"status": "in_progress", "output": []})
        events = self.start()
        for item in final.output:
            events += self._whole(item)
        self.response = final
        ended = {"completed": "response.completed", "incomplete": "response.incomplete"}
        return [*events, self._lifecycle(ended.get(final.status, "response.failed"))]

    def _at(self, index: int) -> dict[str, Any]:
        return {"output_index": index, "item_id": self.response.output[index]["id"]}

    def _lifecycle(self, kind: str) -> dict[str, Any]:
        return self._event(kind, response=self.response.model_dump(mode="json"))

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._sequence += 1
        return {"type": kind, "sequence_number": self._sequence, **fields}
