"""Every query's answer is marked query-only, so the payload store leaves it inline.

A query's answer is never recorded in history, whatever the query: the ``state`` of an
agent, the event stream's poll (``__temporal_workflow_stream_poll``, read by every event
reader), a memory search. ``QueryAnswers`` (a worker interceptor ``SmythPlugin``
installs) encodes each answer with the workflow's own payload converter, as temporalio
would, and adds the ``QUERY_ONLY`` mark; the answer goes on as a ``RawValue``, which
temporalio sends as it is. The same type answered by an update (the stream's poll is
both) is recorded in history and is not marked.
"""

from __future__ import annotations

from typing import Any

import temporalio.worker
from temporalio import workflow
from temporalio.common import RawValue

from smyth_temporal._payloads import QUERY_ONLY

__all__ = ["QueryAnswers"]


class QueryAnswers(temporalio.worker.Interceptor):
    """Marks every query answer ``QUERY_ONLY`` (see ``inline_query_results``).

    Added in 0.11.0.
    """

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor] | None:
        """The inbound interceptor of every workflow."""
        return _MarkedAnswers


class _MarkedAnswers(temporalio.worker.WorkflowInboundInterceptor):
    async def handle_query(self, input: temporalio.worker.HandleQueryInput) -> Any:
        answer = await super().handle_query(input)
        if isinstance(answer, RawValue):
            payload = answer.payload
        else:
            # The converter temporalio would use for it (the workflow's, with its context).
            payload = workflow.payload_converter().to_payloads([answer])[0]
        payload.metadata[QUERY_ONLY] = b"1"
        return RawValue(payload)
