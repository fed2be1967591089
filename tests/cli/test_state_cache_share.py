"""The cache-read share of a run's input tokens in its serialized state and ``smyth state``."""

from __future__ import annotations

from smyth_temporal.cli._output import format_state
from smyth_temporal.types.agent import AgentState
from smyth_temporal.types.messages import Usage


def _state(usage: Usage) -> AgentState:
    return AgentState(
        agent="Claude",
        workflow_id="Claude-1",
        run_id="r",
        status="completed",
        step=3,
        max_steps=8,
        tenant="default",
        usage=usage,
    )


def test_the_cache_read_share_is_in_the_serialized_agent_state() -> None:
    # A property only: GET /v1/runs/{id} and `smyth state --json` had no share to show.
    state = _state(Usage(requests=2, input_tokens=4000, cached_tokens=3000, output_tokens=50))
    assert state.model_dump(mode="json")["usage"]["cache_read_share"] == 0.75
    assert '"cache_read_share":0.75' in state.model_dump_json()


def test_a_usage_validates_with_and_without_the_serialized_share() -> None:
    # Recorded histories and older clients send usages without the key; this version's
    # payloads carry it. Both load, and a share that disagrees is recomputed, not kept.
    old = {"requests": 1, "input_tokens": 1000, "cached_tokens": 800, "output_tokens": 5}
    assert Usage.model_validate(old).cache_read_share == 0.8
    stale = {**old, "cache_read_share": 0.1}
    assert Usage.model_validate(stale) == Usage.model_validate(old)
    assert Usage.model_validate(stale).cache_read_share == 0.8
    state = _state(Usage.model_validate(old)).model_dump(mode="json")
    assert AgentState.model_validate(state).usage.cache_read_share == 0.8


def test_smyth_state_shows_the_share_of_input_read_from_cache() -> None:
    lines = format_state(_state(Usage(requests=2, input_tokens=400, cached_tokens=300)))
    assert (
        "usage    2 requests, 400 tokens (400 in, 0 out), 0 tool calls; 0.75 read from cache"
        in (lines.splitlines())
    )
    # Caching that never hits is shown (0.00); a run without input has no share.
    assert "; 0.00 read from cache" in format_state(_state(Usage(requests=1, input_tokens=10)))
    assert "read from cache" not in format_state(_state(Usage()))
