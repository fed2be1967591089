"""The one access check (``AgentClient.acting_for``): its invariants, searched with Hypothesis.

Temporal is faked at its RPC edge (describe, the first history event, a pinned update),
holding workflow ids whose chains of runs are started again and again, by any tenant:
the worst case for a tenant cache keyed by workflow id. Whatever the principal, its
role, the run's tenant, the order of checks and the cache's size:

- the role decides first, exactly as the role table says;
- a check passes only for a run of the principal's tenant, and never refuses one;
- a decision or interrupt (an update pinned to the chain checked) reaches only a chain of
  the principal's tenant, and reaches the current one whenever it is the principal's;
- another tenant's run is refused in the words a missing one is.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType, WorkflowExecutionStatus
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal import AccessDeniedError, AgentClient, AgentInput, AgentNotFoundError
from smyth_temporal.clients import _tenancy
from smyth_temporal.security import Permission, Principal, Role

ROLE_TABLE: dict[str, set[str]] = {
    "viewer": {"read"},
    "operator": {"read", "operate"},
    "approver": {"read", "approve"},
    "admin": {"read", "operate", "approve", "admin"},
}
"""The roles as the README states them, written out here, not read from the code."""

TENANTS = ("acme", "globex")
IDS = ("run-a", "run-b")
PERMISSIONS: tuple[Permission, ...] = ("read", "operate", "approve", "admin")


@dataclass
class FakeTemporal:
    """Workflow ids and their chains of runs, as a Temporal frontend answers about them."""

    chains: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    """Per workflow id, its chains oldest first: (first run id, tenant or None)."""
    delivered: list[tuple[str, str]] = field(default_factory=list)
    """Updates that reached a run: (workflow id, chain)."""
    describes: int = 0
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    namespace: str = "default"
    data_converter: Any = pydantic_data_converter

    def start(self, workflow_id: str, tenant: str | None) -> str:
        chain = f"run-{next(self._ids)}"
        self.chains.setdefault(workflow_id, []).append((chain, tenant))
        return chain

    def current(self, workflow_id: str) -> tuple[str, str | None] | None:
        chains = self.chains.get(workflow_id)
        return chains[-1] if chains else None

    def tenant_of_chain(self, chain: str) -> str | None:
        for chains in self.chains.values():
            for first, tenant in chains:
                if first == chain:
                    return tenant
        raise AssertionError(f"no chain {chain}")

    # What the clients call.
    @property
    def workflow_service(self) -> FakeTemporal:
        return self

    async def describe_workflow_execution(
        self, request: DescribeWorkflowExecutionRequest, **_: Any
    ) -> DescribeWorkflowExecutionResponse:
        self.describes += 1
        found = self.current(request.execution.workflow_id)
        if found is None:
            raise RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")
        response = DescribeWorkflowExecutionResponse()
        info = response.workflow_execution_info
        info.execution.workflow_id = request.execution.workflow_id
        info.execution.run_id = found[0]
        info.first_run_id = found[0]
        info.status = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
        return response

    def get_workflow_handle(
        self,
        workflow_id: str,
        *,
        run_id: str | None = None,
        first_execution_run_id: str | None = None,
        **_: Any,
    ) -> FakeHandle:
        return FakeHandle(self, workflow_id, run_id, first_execution_run_id)


@dataclass
class FakeHandle:
    server: FakeTemporal
    id: str
    run_id: str | None
    first_execution_run_id: str | None

    async def fetch_history_events(self, **_: Any) -> AsyncIterator[HistoryEvent]:
        tenant = self.server.tenant_of_chain(self.run_id or "")
        event = HistoryEvent(event_type=EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
        started: Any = AgentInput(prompt="x", tenant=tenant) if tenant else "not an agent's"
        [payload] = await pydantic_data_converter.encode([started])
        event.workflow_execution_started_event_attributes.input.payloads.append(payload)
        yield event

    async def execute_update(self, update: str, arg: Any, **_: Any) -> str:
        found = self.server.current(self.id)
        pinned = self.first_execution_run_id
        if found is None or (pinned is not None and pinned != found[0]):
            raise RPCError("workflow execution not found", RPCStatusCode.NOT_FOUND, b"")
        self.server.delivered.append((self.id, found[0]))
        return "done"


principals = st.builds(
    Principal,
    name=st.just("key"),
    tenant=st.sampled_from(TENANTS),
    role=st.sampled_from(tuple(ROLE_TABLE)),
)
starts = st.tuples(st.just("start"), st.sampled_from(IDS), st.none() | st.sampled_from(TENANTS))
checks = st.tuples(
    st.just("check"),
    st.sampled_from(IDS),
    principals,
    st.sampled_from(PERMISSIONS),
    st.booleans(),  # pinned
)
sends = st.tuples(st.just("send"), st.sampled_from(IDS), principals, st.sampled_from(PERMISSIONS))
steps = st.lists(starts | checks | sends, min_size=1, max_size=40)


ACME_APPROVER = Principal(name="key", tenant="acme", role="approver")
REUSED_BY_ANOTHER_TENANT = [
    ("start", "run-a", "acme"),
    ("send", "run-a", ACME_APPROVER, "approve"),  # remembered: run-a is acme's chain
    ("start", "run-a", "globex"),  # the id used again, by another tenant
    ("send", "run-a", ACME_APPROVER, "approve"),  # must not reach globex's run
]


@pytest.mark.parametrize("cache_size", [1, 10_000])
@settings(max_examples=settings().max_examples * 10)  # pure and fast: search wider
@example(steps=REUSED_BY_ANOTHER_TENANT)
@given(steps=steps)
async def test_the_access_check_follows_the_role_table_and_the_run_s_tenant(
    steps: list[tuple[Any, ...]], cache_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tenancy, "TENANT_CACHE_SIZE", cache_size)
    server = FakeTemporal()
    # One client and its tenant cache for every principal, as a gateway has.
    root = AgentClient(server, task_queue="q")  # type: ignore[arg-type]
    for step in steps:
        if step[0] == "start":
            server.start(step[1], step[2])
            continue
        workflow_id, principal, permission = step[1], step[2], step[3]
        agents = root.acting_for(principal)
        current = server.current(workflow_id)
        mine = current is not None and current[1] == principal.tenant
        allowed = permission in ROLE_TABLE[principal.role]
        before = len(server.delivered)
        try:
            if step[0] == "check":
                chain = await agents.identity.owns(workflow_id, permission, pinned=step[4])
            else:
                await agents._update_checked(workflow_id, permission, "u", None, str)
        except AccessDeniedError as exc:
            assert not allowed
            assert len(server.delivered) == before
            assert (
                str(exc)
                == f"key 'key' (role {principal.role}) may not "
                + {
                    "read": "read runs, approvals, memories or schedules",
                    "operate": "start runs, send messages or interrupt",
                    "approve": "decide approvals",
                    "admin": "forget memories",
                }[permission]
            )
            continue
        except AgentNotFoundError as exc:
            assert allowed
            assert len(server.delivered) == before
            assert not mine, "the principal's own run was refused"
            assert str(exc) == f"no agent run with workflow id {workflow_id!r}"
            continue
        assert allowed, "a role was let do what the table does not grant"
        if step[0] == "check":
            assert chain is not None
            # Pinned or not, only a chain of the principal's tenant passes; unpinned, the
            # current one.
            assert server.tenant_of_chain(chain) == principal.tenant
            if not step[4]:
                assert current is not None and chain == current[0]
        else:
            # Sent: it reached the current chain, which is the principal's.
            assert mine and current is not None
            assert server.delivered[before:] == [(workflow_id, current[0])]


def test_the_role_table_is_the_readme_s() -> None:
    roles: tuple[Role, ...] = ("viewer", "operator", "approver", "admin")
    for role in roles:
        principal = Principal(name="k", tenant="acme", role=role)
        assert {p for p in PERMISSIONS if principal.may(p)} == ROLE_TABLE[role]
