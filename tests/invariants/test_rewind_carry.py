"""Invariant: a rewind's notice, once the run takes it, loses nothing an earlier one owed.

``carry_unreconciled(previous, notice)``: every abandoned call of either notice is listed
exactly once (by idempotency key), the new notice's own calls first and in their order,
and everything else about the new notice is unchanged. Searched over notices sharing
and not sharing calls.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.agent.rewind import carry_unreconciled
from smyth_temporal.types.rewind import RewindNotice, RewoundCall

KEYS = st.sampled_from([f"wf/run/{step}/call_{step}_0" for step in range(1, 7)])


def call(key: str) -> RewoundCall:
    step = int(key.split("/")[2])
    return RewoundCall(
        step=step,
        call_id=f"call_{step}_0",
        tool="send",
        arguments_sha256=f"sha-{step}",
        idempotency_key=key,
        outcome="completed",
    )


def notice(run: str, keys: list[str]) -> RewindNotice:
    return RewindNotice(
        to_step=1, abandoned_run_id=run, side_effects=tuple(call(k) for k in keys), prompt=run
    )


@given(
    st.none() | st.lists(KEYS, unique=True, max_size=6),
    st.lists(KEYS, unique=True, max_size=6),
)
def test_a_taken_notice_lists_every_owed_call_once_its_own_first(
    previous: list[str] | None, own: list[str]
) -> None:
    earlier = None if previous is None else notice("r1", previous)
    new = notice("r2", own)
    carried = carry_unreconciled(earlier, new)
    keys = [c.idempotency_key for c in carried.side_effects]
    assert len(keys) == len(set(keys))
    assert keys[: len(own)] == own
    assert set(keys) == set(own) | set(previous or ())
    assert carried.model_copy(update={"side_effects": new.side_effects}) == new
