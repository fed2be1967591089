"""Which stored payloads the server still needs: references in histories, runs and schedules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from google.protobuf.message import Message
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import NamespaceState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    ListNamespacesRequest,
)
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal._payloads import payloads_in
from smyth_temporal.clients._visibility import executions as list_executions
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.storage import DRIVER_NAME, stored_digests

__all__ = ["namespaces_to_scan", "referenced_digests"]

_CONCURRENT_FETCHES = 8
_SYSTEM_NAMESPACE = "temporal-system"
"""The server's own namespace: no SDK client writes payloads for it."""


async def namespaces_to_scan(client: Client, recorded: Iterable[str] = ()) -> list[str]:
    """Every namespace whose histories may refer to the store: better too many than one short.

    The union of the namespaces the server has (if the client may list them; Temporal
    Cloud keys usually may not), those the store recorded (``recorded_namespaces``),
    and the client's own.

    Added in 0.8.0.
    """
    found = {client.namespace, *recorded}
    token = b""
    try:
        while True:
            response = await client.workflow_service.list_namespaces(
                ListNamespacesRequest(page_size=100, next_page_token=token), retry=True
            )
            for entry in response.namespaces:
                info = entry.namespace_info
                if info.state != NamespaceState.NAMESPACE_STATE_DELETED:
                    found.add(info.name)
            token = response.next_page_token
            if not token:
                break
    except RPCError as exc:
        if exc.status not in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED):
            raise
    found.discard(_SYSTEM_NAMESPACE)
    return sorted(found)


async def referenced_digests(
    client: Client,
    *,
    namespaces: Iterable[str] | None = None,
    driver_name: str = DRIVER_NAME,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> set[str]:
    """Every payload-store digest that something the server keeps refers to.

    In each namespace: every workflow history the server still has, open or closed
    (closed ones until the namespace's retention removes them), each run of a
    continue-as-new chain on its own; what open runs hold outside their history (a
    pending activity's heartbeat details and last failure); and the schedules' actions.
    References are decoded from temporalio's reference format (``stored_digests``),
    wherever a payload is: inputs, results, memos, headers, failures' details, and
    payloads carried inside payloads.

    Args:
        client: A client of the server (any namespace).
        namespaces: The namespaces to read (default: ``namespaces_to_scan(client)``).
        driver_name: The file driver's name in references.
        progress: Told (namespace, histories read, histories found or ``None``).

    Raises:
        ConfigurationError: A namespace does not exist on this server or cannot be
            read, or a reference is sealed by the codec: nothing is certain, so
            nothing may be removed.

    Added in 0.4.0. Changed in 0.8.0: every namespace, open runs' pending activities,
    references decoded structurally.
    """
    found: set[str] = set()
    names = list(namespaces) if namespaces is not None else await namespaces_to_scan(client)
    for namespace in names:
        scoped = Client(client.service_client, namespace=namespace)
        try:
            await _scan_namespace(scoped, found, driver_name, progress)
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.PERMISSION_DENIED):
                raise ConfigurationError(
                    f"the payload store serves namespace {namespace!r}, which this server "
                    f"does not let us read ({exc.message}). Its histories may refer to "
                    "stored payloads, so nothing was removed. Run gc with access to every "
                    "namespace that shares the store; if that namespace is gone for good, "
                    "remove its entry under <store>/namespaces/"
                ) from exc
            raise
    return found


async def _scan_namespace(
    client: Client,
    found: set[str],
    driver_name: str,
    progress: Callable[[str, int, int | None], None] | None,
) -> None:
    def collect(message: Message) -> None:
        for payload in payloads_in(message):
            found.update(stored_digests(payload, driver_name))

    listed = [
        (e.id, e.run_id, e.status == WorkflowExecutionStatus.RUNNING)
        async for e in list_executions(client)
    ]
    done = 0
    limit = asyncio.Semaphore(_CONCURRENT_FETCHES)
    if progress is not None:
        progress(client.namespace, 0, len(listed))

    async def scan(workflow_id: str, run_id: str, running: bool) -> None:
        nonlocal done
        async with limit:
            try:
                await read_run(workflow_id, run_id, running)
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                # Removed by retention since it was listed: nothing it refers to is
                # needed for it any more.
        done += 1
        if progress is not None:
            progress(client.namespace, done, len(listed))

    async def read_run(workflow_id: str, run_id: str, running: bool) -> None:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        for event in history.events:
            collect(event)
        if running:
            # Heartbeat details and the last failure of a pending activity are kept
            # outside history until the activity ends.
            collect(
                await client.workflow_service.describe_workflow_execution(
                    DescribeWorkflowExecutionRequest(
                        namespace=client.namespace,
                        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                    ),
                    retry=True,
                )
            )

    await asyncio.gather(*(scan(*entry) for entry in listed))
    async for schedule in await client.list_schedules():
        description = await client.get_schedule_handle(schedule.id).describe()
        collect(description.raw_description)
