"""``smyth audit``'s lines under the table: each run's input tokens and cache-read share."""

from __future__ import annotations

from datetime import datetime

from smyth_temporal.cli.audit import _cache_lines
from smyth_temporal.types.audit import AuditEntry, AuditTrail


def call(run_id: str, input_tokens: int, cached: int | None) -> AuditEntry:
    fields: dict[str, object] = {"input_tokens": input_tokens}
    if cached is not None:
        fields["cached_tokens"] = cached
    return AuditEntry(
        time=datetime(2026, 1, 1), run_id=run_id, event_id=1, kind="model_call", fields=fields
    )


def test_each_run_has_its_line_and_a_run_without_model_input_has_none() -> None:
    trail = AuditTrail(
        workflow_id="w",
        runs=["run-one-xx", "run-two-xx", "run-three"],
        entries=[
            call("run-one-xx", 1000, 0),
            call("run-two-xx", 1000, 900),
            call("run-two-xx", 1000, None),  # a call whose usage said nothing of the cache
        ],
    )
    assert _cache_lines(trail) == [
        "run run-one-: 1000 input tokens, 0.00 read from cache",
        "run run-two-: 2000 input tokens, 0.45 read from cache",
        "all runs: 0.30 read from cache",
    ]
    assert AuditTrail(workflow_id="w", runs=[], entries=[]).cache_read_share() == 0.0
