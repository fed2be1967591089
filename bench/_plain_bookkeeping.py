"""The second baseline of the parked-agents bench: an agent's bookkeeping, by hand.

``PlainBookkeeper`` is ``PlainWaiter`` (one activity, a wait for the ``decide`` update,
two more activities) plus what a temporalio user would write by hand to give it what a
parked agent offers: its status and pending count as search attributes and the pending
request in the memo (so waiting runs can be listed without a worker), written once when
it parks, once when it is decided and once when it ends; a deadline on the wait (a
timer); and events for watchers on a ``temporalio.contrib.workflow_streams`` stream,
shaped like the ones a ``Trader`` publishes (ten while it parks, fifteen after the
decision). Plain temporalio only: the search attributes are the ones the
SDK's dev environment registers, named here, not imported from smyth.

It sits in a module of its own, importing the activities under
``imports_passed_through`` as temporalio advises, so the sandbox re-imports only this
module for each run.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from bench._plain_worker import PLAIN_TIMEOUT, plain_act, plain_quote

STATUS = SearchAttributeKey.for_keyword("SmythStatus")
PENDING = SearchAttributeKey.for_int("SmythPendingApprovals")
DEADLINE = timedelta(days=7)


def _request(started: datetime) -> dict[str, Any]:
    return {
        "id": "apr-1-call_1_0",
        "tool": "sell",
        "call_id": "call_1_0",
        "step": 1,
        "arguments": {"symbol": "ACME", "quantity": 7},
        "arguments_sha256": "5c5fb72360c6fe932b648c6a2deb888cf76c5ab8b09e2b278dcd078210bea657",
        "requested_at": started.isoformat(),
        "deadline": (started + DEADLINE).isoformat(),
    }


@workflow.defn
class PlainBookkeeper:
    """``PlainWaiter`` with visibility, a deadline and a stream of events, by hand."""

    def __init__(self) -> None:
        self._decision: str | None = None
        self._stream = WorkflowStream()
        self._events = self._stream.topic("events")

    def _publish(self, kind: str, **fields: Any) -> None:
        info = workflow.info()
        self._events.publish({"kind": kind, "run_id": info.run_id, "step": 1, **fields})

    def _visibility(self, status: str, pending: list[dict[str, Any]]) -> None:
        workflow.upsert_search_attributes(
            [STATUS.value_set(status), PENDING.value_set(len(pending))]
        )
        workflow.upsert_memo({"smyth_pending": {"tenant": "default", "requests": pending}})

    @workflow.run
    async def run(self, symbol: str) -> str:
        run_id = workflow.info().run_id
        versions = {"instructions": "12ae32cb1ec0", "model": "test-model", "tools": {"sell": "50"}}
        usage = {"requests": 1, "input_tokens": 10, "output_tokens": 10}
        self._publish("run_started", agent="PlainBookkeeper")
        self._publish("message", message={"role": "user", "content": f"Sell {symbol}"})
        self._publish("turn_started", message_id=f"{run_id}/1", versions=versions)
        self._publish("status", status="thinking")
        await workflow.execute_activity(plain_quote, symbol, start_to_close_timeout=PLAIN_TIMEOUT)
        call = {"id": "call_1_0", "name": "sell", "arguments": '{"symbol": "ACME"}'}
        self._publish("message", message_id=f"{run_id}/1", message={"tool_calls": [call]})
        self._publish("usage", message_id=f"{run_id}/1", usage=usage)
        self._publish("status", status="running")
        self._publish("status", status="acting")
        request = _request(workflow.now())
        self._publish("approval_requested", request=request)
        self._publish("status", status="awaiting_approval")
        self._visibility("awaiting_approval", [request])
        try:
            await workflow.wait_condition(lambda: self._decision is not None, timeout=DEADLINE)
        except TimeoutError:
            self._decision = "expired"
        self._publish("approval_decided", request={**request, "status": self._decision})
        self._visibility("running", [])
        self._publish("status", status="acting")
        self._publish("tool_call", call=call)
        done = await workflow.execute_activity(
            plain_act, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        self._publish("tool_result", call_id="call_1_0", name="sell", content=done)
        self._publish("message", message={"role": "tool", "content": done})
        self._publish("status", status="running")
        self._publish("turn_finished", message_id=f"{run_id}/1")
        self._publish("turn_started", message_id=f"{run_id}/2", versions=versions)
        self._publish("status", status="thinking")
        last = await workflow.execute_activity(
            plain_quote, symbol, start_to_close_timeout=PLAIN_TIMEOUT
        )
        self._publish("message", message_id=f"{run_id}/2", message={"content": last})
        self._publish("usage", message_id=f"{run_id}/2", usage=usage)
        self._publish("status", status="running")
        self._publish("turn_finished", message_id=f"{run_id}/2")
        self._publish("status", status="completed")
        self._publish("run_finished", status="completed", output=last)
        self._visibility("completed", [])
        return f"{self._decision}: {done} | {last}"

    @workflow.update
    def decide(self, decision: str) -> str:
        """Take the decision (the agent's approval)."""
        self._decision = decision
        return decision
