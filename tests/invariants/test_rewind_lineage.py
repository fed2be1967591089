"""Invariant: a run's lineage lists a rewind only for a notice that follows a reset of the
run it names, once per abandoned run, with the run that reset created.

Searched over histories of resets and notices (genuine, repeated, forged, early) in any
order, against a plain reading of the rule.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from smyth_temporal.clients._lineage import RewindPairing
from smyth_temporal.types.rewind import RewindNotice

RUNS = st.sampled_from(["r1", "r2", "r3", "r4"])
EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("reset"), RUNS, RUNS),
        st.tuples(st.just("notice"), RUNS, st.sampled_from(["alice", "mallory"])),
    ),
    max_size=12,
)
START = datetime(2026, 11, 26, tzinfo=UTC)


@given(EVENTS)
def test_a_rewind_is_listed_only_after_its_reset_once_per_abandoned_run(
    events: list[tuple[str, str, str]],
) -> None:
    pairing = RewindPairing()
    created: dict[str, str] = {}
    expected: dict[str, tuple[str, str, datetime]] = {}
    for index, (kind, run, other) in enumerate(events):
        time = START + timedelta(seconds=index)
        if kind == "reset":
            pairing.reset(run, other)
            created[run] = other
            continue
        counted = pairing.notice(time, RewindNotice(to_step=1, abandoned_run_id=run, by=other))
        # The rule, read plainly: after a reset of that run, and the first such notice.
        should = run in created and run not in expected
        assert counted == should, (events, index)
        if should:
            expected[run] = (created[run], other, time)
    records = pairing.records
    assert [r.abandoned_run_id for r in records] == list(expected)
    for record in records:
        assert (record.run_id, record.by, record.time) == expected[record.abandoned_run_id]
