"""What a model call reserves before it is made: its prompt and its reply's bound."""

from __future__ import annotations

import pytest

from smyth_temporal.activities._budget import DEFAULT_OUTPUT_ESTIMATE, _estimate
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import ModelRequest


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens", "max_output_tokens"])
def test_a_reservation_assumes_the_replys_bound_by_any_of_its_names(name: str) -> None:
    # Sent as max_output_tokens (the Responses and Gemini APIs' name, passed through by
    # their providers), the bound was not read: the call reserved 1,024 reply tokens
    # whatever it allowed.
    request = ModelRequest(model="m", messages=[Message.user("Hi")], settings={name: 8_000})
    assert _estimate(request).output_tokens == 8_000
    unbounded = ModelRequest(model="m", messages=[Message.user("Hi")])
    assert _estimate(unbounded).output_tokens == DEFAULT_OUTPUT_ESTIMATE
