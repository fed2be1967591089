"""Found by the chaos bench: an approval accepted in the workflow task that asks for it.

A decision can reach a run in the same workflow task as the event that makes its
request (the model call's completion): the worker that had the run was SIGKILLed, its
workflow task timed out, and the client, having seen the request pending, sent the
decision meanwhile. The worker that took the task over accepted it. But a replay of
that history applies the update before the workflow code has made the request again
(temporalio runs update jobs before an activation's other jobs), the handler finds
"unknown approval request", and the workflow task fails on every worker from then on:
the run never ends (bench/README.md, "Chaos").

``chaos_histories/approval_decided_with_its_request.json`` is that run (a
``ChaosTrader`` of ``bench/chaos.py``, 100 kills, seed 12), cut before the failed
workflow task: events 24-32 hold the task that asked for the approval and accepted it.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from bench._chaos_agents import ChaosTrader
from smyth_temporal import SmythPlugin

HISTORY = Path(__file__).parent / "chaos_histories" / "approval_decided_with_its_request.json"


async def test_an_approval_accepted_with_its_request_replays() -> None:
    history = WorkflowHistory.from_json("chaos-approval-81", HISTORY.read_text())
    replayer = Replayer(workflows=[ChaosTrader], plugins=[SmythPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
