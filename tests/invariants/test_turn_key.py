"""``turn_key``: a replayed fork turn is answered from the record only for the same question.

- what does not decide the model's answer (the step, the tenant, where the text streams,
  the record named, fallback bookkeeping) never changes the key, so a fork's turn finds
  its parent's recorded answer;
- any change to what does (a message's text or role, a tool call's arguments, the model,
  the tools, the settings, the purpose) always changes it, so a diverged conversation is
  never answered with the record's answer.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.types.messages import Message, ToolCall
from smyth_temporal.types.model import ModelRequest, RecordedRun, turn_key

texts = st.text(max_size=40)
calls = st.builds(
    ToolCall,
    id=st.from_regex(r"call_[0-9]{1,3}", fullmatch=True),
    name=st.sampled_from(["get_quote", "place_order"]),
    arguments=st.dictionaries(st.sampled_from(["symbol", "n"]), texts, max_size=2).map(json.dumps),
)
messages = st.one_of(
    st.builds(Message, role=st.just("user"), content=texts),
    st.builds(Message, role=st.just("system"), content=texts),
    st.builds(
        Message, role=st.just("assistant"), content=texts, tool_calls=st.lists(calls, max_size=2)
    ),
)
requests = st.builds(
    ModelRequest,
    model=st.sampled_from(["m1", "m2"]),
    messages=st.lists(messages, min_size=1, max_size=6),
    settings=st.dictionaries(st.sampled_from(["temperature", "max_tokens"]), st.integers(0, 9)),
    step=st.integers(0, 300),
)
unrelated: dict[str, Any] = {
    "step": st.integers(0, 300),
    "tenant": st.sampled_from(["default", "acme"]),
    "stream_id": st.none() | st.just("msg-7"),
    "overloaded_after": st.none() | st.integers(1, 3),
    "replay_from": st.none() | st.builds(RecordedRun, workflow_id=texts, run_id=texts),
    "agent": texts,
}


@given(requests, st.fixed_dictionaries({}, optional=unrelated))
def test_what_does_not_decide_the_answer_never_changes_the_key(
    request: ModelRequest, changes: dict[str, Any]
) -> None:
    assert turn_key(request.model_copy(update=changes)) == turn_key(request)


@given(requests, st.data())
def test_any_change_to_the_question_changes_the_key(
    request: ModelRequest, data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(request.messages) - 1))
    message = request.messages[index]
    kind = data.draw(
        st.sampled_from(["text", "role", "call", "model", "tools", "settings", "purpose"])
    )
    if kind == "text":
        edited = message.model_copy(update={"content": (message.content or "") + "!"})
        changed = _with_message(request, index, edited)
    elif kind == "role":
        role = "user" if message.role != "user" else "system"
        changed = _with_message(request, index, message.model_copy(update={"role": role}))
    elif kind == "call":
        call = ToolCall(id="call_x", name="get_quote", arguments='{"symbol": "X"}')
        edited = message.model_copy(update={"tool_calls": [*message.tool_calls, call]})
        changed = _with_message(request, index, edited)
    elif kind == "model":
        changed = request.model_copy(update={"model": request.model + "-other"})
    elif kind == "tools":
        changed = request.model_copy(update={"tools": [*request.tools, {"type": "function"}]})
    elif kind == "settings":
        settings = {**request.settings, "seed": 1}
        changed = request.model_copy(update={"settings": settings})
    else:
        changed = request.model_copy(update={"purpose": "summary"})
    assert turn_key(changed) != turn_key(request)


def _with_message(request: ModelRequest, index: int, message: Message) -> ModelRequest:
    edited = [*request.messages]
    edited[index] = message
    return request.model_copy(update={"messages": edited})
