"""The gateway fuzzed from its own OpenAPI document (Schemathesis), with every role's key.

The gateway runs on loopback in a thread of its own (its own event loop, Temporal
client and worker), so Schemathesis calls it as any HTTP client would. Both tenants
have a run waiting for an approval, so listings and run routes have something to leak
(some generated requests are aimed at them and at the agents served). For every
generated request, sent with a key of one tenant (its role drawn per example) and an
admin key of the other:

- no answer is a 500, and none carries a traceback;
- no answer names a run of the tenant the key does not belong to.

Examples per operation follow the Hypothesis profile (``dev``: a few, bounded below;
``--hypothesis-profile=ci``: more).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case
from temporalio.service import RPCError

from smyth_temporal import AgentClient, AgentInput
from smyth_temporal.gateway import ROLES, GatewayOptions, KeyStore, create_app
from smyth_temporal.memory import EdgeStore, HashEmbedder, MemoryManager
from smyth_temporal.testing import agent_worker, new_task_queue
from tests.helpers.agents import Analyst
from tests.helpers.cli_models import trader as trader_model
from tests.helpers.gateway_support import OTHER, SERVED, TENANT, serving
from tests.helpers.trader import Trader

STARTUP_TIMEOUT = 30.0
EXAMPLES_DIVISOR = 4
"""Examples per operation: the profile's ``max_examples`` over this (``dev``: 5, ``ci``:
50); the document has 16 operations, and each example is sent with 5 keys."""
CALL_TIMEOUT = 30.0
SESSION_PATIENCE = 2.0
PENDING_REQUEST = "apr-1-call_1_0"
"""The approval request each tenant's waiting run has."""


@dataclass
class Fuzzed:
    """The running gateway, its keys (by tenant and role) and each tenant's run ids."""

    url: str = ""
    keys: dict[tuple[str, str], str] = field(default_factory=dict)
    runs: dict[str, set[str]] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    stop: asyncio.Event | None = None
    failure: BaseException | None = None


async def _serve(address: str, keys_path: Path, fuzzed: Fuzzed) -> None:
    agents = await AgentClient.connect(address, task_queue=new_task_queue("smyth-fuzz"))
    store = KeyStore(keys_path)
    for role in ROLES:
        fuzzed.keys[(TENANT, role)] = store.create(tenant=TENANT, role=role, name=role)[1]
    fuzzed.keys[(OTHER, "admin")] = store.create(tenant=OTHER, role="admin", name="other")[1]
    options = GatewayOptions(auth_burst=100_000, worker_timeout=5.0, pickup_timeout=5.0)
    app = create_app(agents, SERVED, keys=store, options=options)
    fuzzed.agents = list(app.state.gateway.agent_names)
    # Every worker serves memory: its own store, not the default under the current
    # directory, which another test of this process may hold open with other settings.
    memory = MemoryManager(EdgeStore(keys_path.parent / "memory"), HashEmbedder(64))
    worker = agent_worker(
        agents.client,
        Trader,
        Analyst,
        model=trader_model(),
        task_queue=agents.task_queue,
        memory=memory,
    )
    async with worker, serving(app) as url:
        # As `smyth serve` does at start-up: the agents the worker lacks (Operator,
        # Researcher) are then refused by every route.
        served = [await app.state.gateway.check_served(name) for name in fuzzed.agents]
        assert served == [True, False, True, False], served
        for tenant in (TENANT, OTHER):
            waiting = await agents.start(Trader, AgentInput(prompt="sell ACME:1", tenant=tenant))
            fuzzed.runs[tenant] = {waiting.id}
        fuzzed.url = url
        fuzzed.stop = asyncio.Event()
        fuzzed.ready.set()
        try:
            await fuzzed.stop.wait()
        finally:
            # The fuzz starts runs and sessions of both tenants that wait for ever:
            # end them, so later tests' listings on the shared server do not see them.
            query = f"TaskQueue = '{agents.task_queue}' AND ExecutionStatus = 'Running'"
            async for run in agents.client.list_workflows(query):
                with contextlib.suppress(RPCError):  # ended meanwhile
                    await agents.client.get_workflow_handle(run.id).terminate(reason="fuzz over")


@pytest.fixture(scope="module")
def fuzzed(address: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    state = Fuzzed()
    loop = asyncio.new_event_loop()
    path = tmp_path_factory.mktemp("fuzz") / "keys.json"

    def run() -> None:
        try:
            loop.run_until_complete(_serve(address, path, state))
        except BaseException as exc:  # reported by the fixture, not lost in a thread
            state.failure = exc
            state.ready.set()

    thread = threading.Thread(target=run, name="fuzzed-gateway", daemon=True)
    thread.start()
    assert state.ready.wait(STARTUP_TIMEOUT), "the fuzzed gateway did not start"
    if state.failure is not None:
        raise state.failure
    try:
        yield state
    finally:
        if state.stop is not None:
            loop.call_soon_threadsafe(state.stop.set)
        thread.join(STARTUP_TIMEOUT)
        with contextlib.suppress(Exception):
            loop.close()


def test_no_request_fails_the_gateway_or_names_another_tenants_runs(fuzzed: Fuzzed) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 16  # the whole document, not a part of it
    examples = max(1, settings.default.max_examples // EXAMPLES_DIVISOR)
    for operation in operations:

        @given(case=operation.as_strategy(), data=st.data())
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def sent_with_a_key_of_each_tenant(case: Case, data: st.DataObject) -> None:
            aim(case, data, fuzzed)
            # One role's key of the tenant whose runs are aimed at, drawn per example
            # (so every role meets every operation over the examples), and the other
            # tenant's admin key: the one that must never see the first's runs.
            role = data.draw(st.sampled_from(ROLES), label="role")
            for tenant, role_of in ((TENANT, role), (OTHER, "admin")):
                check(case, tenant, role_of, fuzzed.keys[(tenant, role_of)], fuzzed.runs)

        sent_with_a_key_of_each_tenant()


def aim(case: Case, data: st.DataObject, fuzzed: Fuzzed) -> None:
    """Point some cases at things that exist: the agents served, both tenants' runs.

    Random ids only ever meet 404s; a run of the other tenant is where a leak would
    be. Routes that wait for a run to end are left to random ids (a waiting run
    never ends here).
    """
    parameters = case.path_parameters or {}
    if "agent" in parameters and data.draw(st.booleans()):
        parameters["agent"] = data.draw(st.sampled_from(fuzzed.agents))
    # OpenAI's routes name the agent as the body's model: left random, since a served
    # one would start a session per request (a Responses conversation is a new one),
    # each waiting for approval, until the listings time out on the shared worker.
    waits = case.formatted_path.endswith(("/result", "/events"))
    if "workflow_id" in parameters and not waits and data.draw(st.booleans()):
        runs = sorted(i for ids in fuzzed.runs.values() for i in ids)
        parameters["workflow_id"] = data.draw(st.sampled_from(runs))
        if "request_id" in parameters and data.draw(st.booleans()):
            parameters["request_id"] = PENDING_REQUEST


def check(case: Case, tenant: str, role: str, key: str, runs: dict[str, set[str]]) -> None:
    """Send ``case`` with ``key``: no 500, no traceback, no other tenant's run named.

    A run id the request itself names may come back (a 404 says which id it did not
    find); any other id of another tenant's run may not.
    """
    # A session's reply (or its stream) waits for the agent, which may wait for a
    # person's approval: a request still waiting is no failure, just not an answer.
    waits = "/sessions/" in case.formatted_path or case.formatted_path.endswith(
        ("/chat/completions", "/responses")
    )
    try:
        response = case.call(
            headers={"Authorization": f"Bearer {key}"},
            timeout=SESSION_PATIENCE if waits else CALL_TIMEOUT,
        )
    except requests.Timeout:
        if waits:
            return
        raise
    text = response.text
    sent = f"{case.formatted_path} {case.path_parameters} {case.query} {case.body}"
    where = f"{case.method} {case.formatted_path} as {tenant}/{role}: {response.status_code}"
    assert response.status_code != 500, f"{where} {text}"
    assert "Traceback" not in text, where
    for owner, ids in runs.items():
        if owner != tenant:
            leaked = [i for i in ids if i in text and i not in sent]
            assert not leaked, f"{where} names {owner}'s runs {leaked}: {text}"
