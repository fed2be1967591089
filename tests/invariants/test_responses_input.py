"""The Responses API's input rule when approvals are answered: an old prompt is never re-sent.

A client may send the conversation again with its ``mcp_approval_response`` items (the
whole history, as clients without ``previous_response_id`` do). Whatever the items:

- the text sent to the session is the last user message after the last approval
  response, or nothing (``""``: the input only decides);
- a user message at or before the last approval response is never sent again (it was
  answered already: sending it would start its turn twice);
- without approval responses, the rule is the plain one (the last user message).
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException
from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.gateway._responses import ResponsesRequest

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(str.strip)
user = st.builds(lambda t: {"role": "user", "content": f"u:{t}"}, words)
assistant = st.builds(lambda t: {"role": "assistant", "content": f"a:{t}"}, words)
answer = st.builds(
    lambda i, ok: {"type": "mcp_approval_response", "approval_request_id": i, "approve": ok},
    st.sampled_from(["apr-1", "apr-2"]),
    st.booleans(),
)
items = st.lists(st.one_of(user, assistant, answer), max_size=8)


def _is_answer(item: dict[str, Any]) -> bool:
    return item.get("type") == "mcp_approval_response"


@given(items)
def test_only_a_user_message_after_the_last_approval_response_is_sent(
    given_items: list[dict[str, Any]],
) -> None:
    request = ResponsesRequest(model="Operator", input=given_items)
    answered = [i for i, item in enumerate(given_items) if _is_answer(item)]
    after = given_items[answered[-1] + 1 :] if answered else given_items
    users = [item["content"] for item in after if item.get("role") == "user"]
    try:
        text = request.text()
    except HTTPException as refused:
        assert refused.status_code == 400
        assert not users and not answered  # only input with nothing to do is refused
        return
    # The last user message after the last answer, never one the answers followed.
    assert text == (users[-1] if users else "")
    assert len(request.approvals()) == len(answered)
