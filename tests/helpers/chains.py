"""Reading a continue-as-new chain back from the server, for the long-run tests."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory


async def chain_histories(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The history of every run of a workflow's continue-as-new chain, oldest first."""
    description = await client.get_workflow_handle(workflow_id).describe()
    run_id = description.raw_description.workflow_execution_info.first_run_id
    histories: list[WorkflowHistory] = []
    while True:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        histories.append(history)
        last = history.events[-1]
        if last.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            return histories
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
