"""Invariant: a streamed answer, however its chunks fall, is the answer ``complete`` gives.

``StreamedCompletion`` replaced openai's ``ChatCompletionStreamState`` in the provider
(which rebuilt the whole message for every chunk: a 1,000-call turn took about 50 s of
CPU, issue 23 item 20). Over generated messages (text, tool calls with odd ids, names
and arguments) streamed in arbitrary pieces, parallel calls' pieces interleaved and
several pieces to a chunk, the response must be the unstreamed one, and the one
openai's accumulator gave. Pure: no server.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from smyth_temporal.models._openai_response import StreamedCompletion, to_model_response
from smyth_temporal.testing import chat_completion
from smyth_temporal.testing._fake_stream import text_pieces
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

REQUEST = ModelRequest(model="test-model", messages=[Message.user("Go.")], step=4)

texts = st.text(st.characters(codec="utf-8"), max_size=40)
calls = st.lists(
    st.tuples(texts.filter(bool), texts.filter(bool), texts), max_size=6, unique_by=lambda c: c[0]
)


def pieces(data: st.DataObject, text: str) -> list[str]:
    size = data.draw(st.none() | st.integers(1, 12))
    return text_pieces(text, size)


def deltas(data: st.DataObject, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The message's deltas: text first, then the calls' pieces interleaved."""
    message = body["choices"][0]["message"]
    text = [{"content": piece} for piece in pieces(data, message["content"] or "")]
    per_call: list[list[dict[str, Any]]] = []
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        rest = pieces(data, call["function"]["arguments"])
        per_call.append([head, *({"index": index, "function": {"arguments": p}} for p in rest)])
    # Each call's pieces stay in order and calls start in index order (as providers
    # stream parallel calls); after that, their pieces interleave at random.
    taken, started = [0] * len(per_call), 0
    calls: list[dict[str, Any]] = []
    while len(calls) < sum(map(len, per_call)):
        open_calls = [i for i in range(started) if taken[i] < len(per_call[i])]
        index = data.draw(st.sampled_from(open_calls + [started][: started < len(per_call)]))
        started = max(started, index + 1)
        calls.append(per_call[index][taken[index]])
        taken[index] += 1
    return text + [{"tool_calls": [call]} for call in calls]


def chunks(data: st.DataObject, body: dict[str, Any]) -> list[ChatCompletionChunk]:
    """The stream of ``body``: an opening, the deltas grouped at random, the finish, usage."""
    items = deltas(data, body)
    grouped: list[dict[str, Any]] = []
    while items:
        size = data.draw(st.integers(1, 3))
        group, items = items[:size], items[size:]
        merged: dict[str, Any] = {}
        for delta in group:
            if "tool_calls" in delta and "tool_calls" in merged:
                merged["tool_calls"] = merged["tool_calls"] + delta["tool_calls"]
            elif "content" in delta and "content" in merged:
                merged["content"] += delta["content"]
            else:
                merged.update(delta)
        grouped.append(merged)
    choice = body["choices"][0]
    content = choice["message"]["content"]
    opening = {"role": "assistant", "content": "" if content else None, "refusal": None}
    wire = [
        [{"index": 0, "delta": delta, "finish_reason": None}] for delta in [opening, *grouped, {}]
    ]
    wire[-1][0]["finish_reason"] = choice["finish_reason"]
    head = {"id": body["id"], "created": body["created"], "model": body["model"]}
    stream = [{**head, "object": "chat.completion.chunk", "choices": c} for c in wire]
    stream.append(
        {**head, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"]}
    )
    return [ChatCompletionChunk.model_validate(chunk) for chunk in stream]


@given(data=st.data(), content=st.none() | texts.filter(bool), tool_calls=calls)
def test_a_streamed_answer_is_the_completed_one_however_its_chunks_fall(
    data: st.DataObject, content: str | None, tool_calls: list[tuple[str, str, str]]
) -> None:
    body = chat_completion(content, list(tool_calls))
    streamed, theirs = StreamedCompletion(), ChatCompletionStreamState[object]()
    for chunk in chunks(data, body):
        streamed.add(chunk)
        theirs.handle_chunk(chunk)
    completion = streamed.completion()
    assert completion is not None
    expected = to_model_response(ChatCompletion.model_validate(body), REQUEST)
    assert to_model_response(completion, REQUEST) == expected
    # What openai's accumulator gave (its empty opening text made None, as we did).
    snapshot = theirs.current_completion_snapshot
    if snapshot.choices[0].message.content == "":
        snapshot.choices[0].message.content = None
    assert to_model_response(completion, REQUEST) == to_model_response(snapshot, REQUEST)
