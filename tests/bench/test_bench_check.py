"""``bench.check``'s verdict: guarded ratios against their bounds (no bench is run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.check import BOUNDS_FILE, Bound, load_bounds, main, ratios, verdict


def test_a_ratio_past_its_bound_fails_and_one_within_passes() -> None:
    bounds = {"step_latency.step": Bound(max=1.1), "parked.pace": Bound(min=0.6)}
    within = verdict({"step_latency.step": 1.1, "parked.pace": 0.6}, bounds)
    assert [f.failed for f in within] == [False, False]
    past = verdict({"step_latency.step": 1.1001, "parked.pace": 0.59}, bounds)
    assert [f.failed for f in past] == [True, True]


def test_a_guarded_figure_nobody_measured_fails() -> None:
    bounds = {"step_latency.step": Bound(max=1.1)}
    assert [f.failed for f in verdict({}, bounds)] == [True]
    assert [f.failed for f in verdict({"step_latency.step": None}, bounds)] == [True]


def test_only_keyed_rows_are_guarded() -> None:
    documents = {
        "step_latency": {
            "headline": [
                {"metric": "a step", "ratio": 1.02, "key": "step"},
                {"metric": "a detail", "ratio": 9.0},
            ]
        }
    }
    assert ratios(documents) == {"step_latency.step": 1.02}


def test_the_recorded_bounds_load_and_each_says_why() -> None:
    bounds = load_bounds(BOUNDS_FILE)
    assert bounds["step_latency.step"].max == 1.1
    assert all(b.why for b in bounds.values())


def test_a_bound_without_a_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bounds.toml"
    path.write_text('[step_latency.step]\nwhy = "no number"\n')
    with pytest.raises(ValueError, match="needs max and/or min"):
        load_bounds(path)


def test_main_exits_nonzero_when_a_ratio_passes_its_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bounds = tmp_path / "bounds.toml"
    bounds.write_text('[step_latency.step]\nmax = 1.1\nwhy = "issue 24"\n')
    results = tmp_path / "results"
    results.mkdir()
    row = {"metric": "agent step", "ratio": 1.5, "key": "step"}
    document = {"bench": "step_latency", "headline": [row]}
    (results / "step_latency.json").write_text(json.dumps(document))
    assert main(["--results", str(results), "--bounds", str(bounds)]) == 1
    assert "FAIL step_latency.step" in capsys.readouterr().out
    row["ratio"] = 1.02
    (results / "step_latency.json").write_text(json.dumps(document))
    assert main(["--results", str(results), "--bounds", str(bounds)]) == 0
