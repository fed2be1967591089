"""An MCP client's answer to a task's approval (``tasks/update``) approves only when it says so.

``inputResponses`` is whatever JSON a client sends. Whatever it is, reading one answer
either refuses it with the protocol's "invalid params" (and nothing is decided, since
every answer is read before any is applied), or yields: nothing (a dismissed form), a
rejection, or an approval, and an approval only from ``accept`` with ``approve`` the
boolean ``true``. And the key an approval is asked under names its request, the votes it
had and the arguments shown, so an answer to an older question never lands on a newer one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from smyth_temporal.mcp_server._tasks_extension import _decision, _key
from smyth_temporal.types.approvals import ApprovalDecision, ApprovalRequest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
contents = (
    st.dictionaries(st.sampled_from(["approve", "comment", "other"]), json_values, max_size=3)
    | json_values
)
answers = (
    st.fixed_dictionaries(
        {"action": st.sampled_from(["accept", "decline", "cancel", "maybe", ""]) | json_values},
        optional={"content": contents, "_meta": json_values},
    )
    | json_values
)


@given(answers)
@example({"action": "accept", "content": {"approve": True, "comment": "fine"}})
@example({"action": "accept", "content": {"approve": False}})
@example({"action": "accept", "content": {"approve": "true"}})
@example({"action": "accept", "content": {"approve": 1}})
@example({"action": "decline", "content": {"approve": True}})
@example({"action": "cancel"})
def test_an_answer_approves_only_an_accept_with_approve_true(answer: Any) -> None:
    try:
        decision = _decision("apr-1-call_1/0/ab", answer)
    except MCPError as refused:
        assert refused.error.code == INVALID_PARAMS
        return
    said: dict[str, Any] = answer if isinstance(answer, dict) else {}
    content: dict[str, Any] = said["content"] if isinstance(said.get("content"), dict) else {}
    if decision is None:
        assert said.get("action") == "cancel"
        return
    approve, comment = decision
    assert approve is (said.get("action") == "accept" and content.get("approve") is True)
    assert comment is None or comment == content.get("comment")


def request(request_id: str, votes: int, sha: str) -> ApprovalRequest:
    now = datetime.now(UTC)
    vote = ApprovalDecision(approved=True, by="someone")
    return ApprovalRequest(
        id=request_id,
        tool="sell",
        call_id="call_1",
        step=1,
        arguments={},
        arguments_sha256=sha,
        requested_at=now,
        deadline=now,
        votes=[vote] * votes,
    )


ids = st.text(min_size=1, max_size=12)
hashes = st.text("0123456789abcdef", min_size=1, max_size=8)


@given(ids, st.integers(0, 3), hashes, ids, st.integers(0, 3), hashes)
def test_two_questions_share_a_key_only_if_they_are_the_same_question(
    id_a: str, votes_a: int, sha_a: str, id_b: str, votes_b: int, sha_b: str
) -> None:
    same = (id_a, votes_a, sha_a) == (id_b, votes_b, sha_b)
    assert (_key(request(id_a, votes_a, sha_a)) == _key(request(id_b, votes_b, sha_b))) is same
