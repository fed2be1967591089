"""Probe runs end before any agent code runs: ``ProbeInterceptor``.

``AgentClient.check_served`` (the gateway's and ``smyth serve``'s check that a worker
has an agent) starts a run of the agent's type under a ``smyth-probe-`` workflow id and
watches its first workflow task: a worker without the type fails it as "not
registered"; one with it completes it. Started without input, most agents' ``run``
fails on the missing argument, but an agent whose ``run`` gives its input a default
would really run, a model call and maybe a tool before the probe is terminated. So
agent workers end a probe run in its first task, before ``run`` is called.

Added in 0.8.0.
"""

from __future__ import annotations

from typing import Any

import temporalio.worker
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from smyth_temporal._names import PROBE_ID_PREFIX

__all__ = ["PROBE_ERROR_TYPE", "ProbeInterceptor"]

PROBE_ERROR_TYPE = "SmythProbe"
"""The failure type a probe run ends with on a worker that has its agent."""


class ProbeInterceptor(temporalio.worker.Interceptor):
    """Ends probe runs (``smyth-probe-`` ids) before the agent's ``run`` is called."""

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        """The inbound interceptor that checks the run's id."""
        return _ProbeInbound


class _ProbeInbound(temporalio.worker.WorkflowInboundInterceptor):
    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        if workflow.info().workflow_id.startswith(PROBE_ID_PREFIX):
            raise ApplicationError(
                "a probe: this worker serves the agent (no agent code ran)",
                type=PROBE_ERROR_TYPE,
                non_retryable=True,
            )
        return await super().execute_workflow(input)
