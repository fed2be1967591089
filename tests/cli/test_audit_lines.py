"""``smyth audit``'s lines under the table: each run's input tokens and cache-read share."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console

from smyth_temporal.cli.audit import _cache_lines, _table
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


def test_a_replayed_model_call_says_so_in_the_table_instead_of_zero_tokens() -> None:
    paid = call("run-one-xx", 1000, 0)
    paid.fields.update(model="m", output_tokens=10)
    replayed = call("run-one-xx", 0, 0)
    replayed.fields.update(model="m", output_tokens=0, replayed=True)
    trail = AuditTrail(workflow_id="w", runs=["run-one-xx"], entries=[paid, replayed])
    console = Console(width=400, record=True)
    console.print(_table(trail))
    paid_row, replayed_row = [
        line for line in console.export_text().splitlines() if "model_call" in line
    ]

    assert "m (1000+10 tokens)" in paid_row and "replayed" not in paid_row
    assert "m (replayed from the parent's record, not paid)" in replayed_row
    assert "0+0 tokens" not in replayed_row
