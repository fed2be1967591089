"""A fork finds a fallback model's recorded answer by the first model's request, and by
nothing else: a request that differs beyond its model is never taken for the same turn."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.activities.recorded import _moved_on
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest

ASKED = ModelRequest(
    model="anthropic:claude-primary",
    messages=[Message(role="user", content="How are markets?")],
    overloaded_after=2,
)
BACKUP = ASKED.model_copy(update={"model": "anthropic:claude-backup", "overloaded_after": None})

texts = st.text(min_size=1, max_size=20)
changes: st.SearchStrategy[tuple[str, Any]] = st.one_of(
    st.tuples(st.just("messages"), st.lists(texts, min_size=1, max_size=3)),
    st.tuples(st.just("settings"), st.dictionaries(texts, st.integers(), min_size=1)),
    st.tuples(st.just("tools"), st.lists(texts.map(lambda n: {"name": n}), min_size=1)),
    st.tuples(st.just("purpose"), st.sampled_from(["summary", "review"])),
)


def test_the_first_models_request_is_the_same_turn_as_its_fallbacks() -> None:
    assert _moved_on(ASKED, BACKUP)
    # The last model of a chain never moves on (no overloaded_after), nor a call to itself.
    assert not _moved_on(ASKED.model_copy(update={"overloaded_after": None}), BACKUP)
    assert not _moved_on(ASKED, ASKED.model_copy(update={"overloaded_after": None}))


@given(changes)
def test_a_request_that_differs_beyond_its_model_is_never_a_fallback_of_another(
    change: tuple[str, Any],
) -> None:
    field_name, value = change
    if field_name == "messages":
        value = [Message(role="user", content=text) for text in value]
    later = BACKUP.model_copy(update={field_name: value})
    if later.model_dump(include={field_name}) == BACKUP.model_dump(include={field_name}):
        return  # drew the same value: not a change
    assert not _moved_on(ASKED, later)
