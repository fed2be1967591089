"""Invariants of approval notifications, searched with Hypothesis.

- Two different notifications never share a delivery key (or the id derived from it),
  whatever the workflow ids, request ids and channel names hold: a receiver that keeps
  one message per key never drops a notification it has not seen.
- Whatever the model puts in the arguments, the Slack text carries no link or mention
  but the console link the worker adds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.notifications._message import webhook_body
from smyth_temporal.types import ApprovalNotice, ApprovalRequest, arguments_sha256

NOW = datetime(2026, 11, 26, tzinfo=UTC)

ids = st.text(min_size=1, max_size=12, alphabet=st.characters(codec="utf-8"))
channels = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,8}", fullmatch=True)
events = st.one_of(st.just(("requested", 0)), st.tuples(st.just("escalated"), st.integers(1, 5)))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def make(
    workflow_id: str,
    request_id: str,
    channel: str,
    event: tuple[str, int],
    arguments: dict[str, Any] | None = None,
) -> ApprovalNotice:
    arguments = arguments or {}
    request = ApprovalRequest(
        id=request_id,
        tool="pay",
        call_id="c",
        step=1,
        arguments=arguments,
        arguments_sha256=arguments_sha256(arguments),
        requested_at=NOW,
        deadline=NOW + timedelta(hours=1),
    )
    kind, step = event
    return ApprovalNotice(
        workflow_id=workflow_id,
        agent="A",
        request=request,
        channel=channel,
        kind=kind,
        escalation=step,
    )  # type: ignore[arg-type]


@given(st.tuples(ids, ids, channels, events), st.tuples(ids, ids, channels, events))
def test_two_notifications_never_share_a_delivery_key(
    one: tuple[str, str, str, tuple[str, int]], other: tuple[str, str, str, tuple[str, int]]
) -> None:
    first, second = make(*one), make(*other)
    assert (first.delivery_key == second.delivery_key) == (one == other)
    assert (first.delivery_id == second.delivery_id) == (one == other)


@given(ids, ids, ids, channels, events)
def test_a_slash_in_an_id_cannot_shift_the_key_parts(
    x: str, y: str, z: str, channel: str, event: tuple[str, int]
) -> None:
    # "x/y" + "z" and "x" + "y/z" read the same when the parts are joined as they are.
    first = make(f"{x}/{y}", z, channel, event)
    second = make(x, f"{y}/{z}", channel, event)
    assert first.delivery_key != second.delivery_key
    assert first.delivery_id != second.delivery_id


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=4), ids)
def test_the_slack_text_has_no_link_but_the_console_link(
    arguments: dict[str, Any], workflow_id: str
) -> None:
    text = webhook_body(
        make(workflow_id, "apr-1-c", "hook", ("requested", 0), arguments),
        "https://agents.example.com/console",
    )["text"]
    assert text.count("<") == 1 and text.count(">") == 1
    assert text.index("<https://agents.example.com/console/#/runs/") < text.index(">")
