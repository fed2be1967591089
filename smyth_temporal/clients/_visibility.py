"""Listing workflow executions, paused ones included.

temporalio 1.35's ``Client.list_workflows`` cannot convert the ``PAUSED`` execution
status (Workflow Pause is newer than the SDK): one paused run anywhere in the
namespace makes the whole listing raise ``ValueError: 8 is not a valid
WorkflowExecutionStatus``. ``executions`` pages through the raw visibility API
instead and shows a paused run as running (which it is, to everything but the task
dispatcher); ``is_paused`` reads the real status from ``raw_info``.

Runs carry their tenant as the ``SmythTenant`` search attribute, set when they are
started (``start_tagged``), so a listing of one tenant's runs asks the server for
those only (``tenant_clause``). A namespace without the attribute registered still
works: starts go on without it and listings without the clause (both noticed once
per client and logged), and the caller tells tenants apart from each run's input.
"""

from __future__ import annotations

import dataclasses
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import structlog
from temporalio.api.enums.v1 import WorkflowExecutionStatus as RawStatus
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from smyth_temporal.types.visibility import TENANT_ATTRIBUTE

__all__ = [
    "PAUSED",
    "execution_page",
    "executions",
    "is_paused_execution",
    "start_tagged",
    "tenant_clause",
    "tenant_query",
]

log = structlog.get_logger("smyth_temporal.clients")

_T = TypeVar("_T")

PAUSED = RawStatus.WORKFLOW_EXECUTION_STATUS_PAUSED
"""The raw status of a paused run (not in the SDK's ``WorkflowExecutionStatus``)."""

_PAGE = 500
_KNOWN = frozenset(int(status) for status in WorkflowExecutionStatus)

# Tenants of API keys are letters, digits, ``_`` and ``.``; anything else a Python
# caller passes is filtered by the caller alone, never spliced into a query.
_QUOTABLE = re.compile(r"[A-Za-z0-9_.\-]{1,128}")

# Per Temporal client: whether its namespace has ``SmythTenant`` (absent: not known yet).
_TAGGED: weakref.WeakKeyDictionary[Client, bool] = weakref.WeakKeyDictionary()


def _undefined_attribute(exc: BaseException) -> bool:
    """Whether the server refused ``SmythTenant`` as an unknown search attribute."""
    text = exc.message if isinstance(exc, RPCError) else str(exc)
    return TENANT_ATTRIBUTE.name in text and "not defined" in text


def _remember(client: Client, tagged: bool, why: str = "") -> None:
    if client not in _TAGGED and not tagged:
        log.warning(
            "visibility.tenant_attribute_missing",
            attribute=TENANT_ATTRIBUTE.name,
            namespace=client.namespace,
            error=why,
        )
    _TAGGED[client] = tagged


async def _tagged(client: Client) -> bool | None:
    """Whether the namespace has ``SmythTenant``, asked once per client (``None``: unknown).

    A server that cannot tell (an API key that may not list search attributes) is
    found out from the first start or listing the attribute is refused in.
    """
    if client in _TAGGED:
        return _TAGGED[client]
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as exc:
        # The time-skipping test server has no custom search attributes at all.
        if exc.status == RPCStatusCode.UNIMPLEMENTED:
            _remember(client, False, exc.message)
        return _TAGGED.get(client)
    tagged = TENANT_ATTRIBUTE.name in response.custom_attributes
    _remember(client, tagged, "" if tagged else "not registered in the namespace")
    return tagged


async def start_tagged(
    client: Client, tenant: str, start: Callable[[TypedSearchAttributes], Awaitable[_T]]
) -> _T:
    """``start(search_attributes)`` with the run's tenant as ``SmythTenant``.

    Where the namespace lacks the attribute (a cluster set up before 0.8.0, the
    time-skipping test server), the run is started without it.

    Added in 0.8.0.
    """
    if await _tagged(client) is not False:
        pair = SearchAttributePair(TENANT_ATTRIBUTE, tenant)
        try:
            return await start(TypedSearchAttributes([pair]))
        except Exception as exc:
            if not _undefined_attribute(exc):
                raise
            _remember(client, False, str(exc))
    return await start(TypedSearchAttributes.empty)


def tenant_clause(tenant: str) -> str | None:
    """A visibility condition for ``tenant``'s runs and runs without a tenant attribute.

    Runs started before 0.8.0 (or by other means) have no ``SmythTenant``: they are
    kept, and the caller tells their tenant from their input. ``None`` when ``tenant``
    cannot be quoted safely: then the caller filters every run itself.
    """
    if not _QUOTABLE.fullmatch(tenant):
        return None
    name = TENANT_ATTRIBUTE.name
    return f"({name} = '{tenant}' OR {name} IS NULL)"


async def tenant_query(client: Client, query: str, tenant: str | None) -> str:
    """``query`` narrowed to ``tenant``'s runs where the server can (see ``tenant_clause``)."""
    if tenant is None or await _tagged(client) is False:
        return query
    clause = tenant_clause(tenant)
    if clause is None:
        return query
    return f"{query} AND {clause}" if query else clause


async def execution_page(
    client: Client, query: str, *, tenant: str | None, page_size: int, token: bytes = b""
) -> tuple[list[WorkflowExecution], bytes]:
    """One page of the executions ``query`` matches, narrowed to ``tenant`` where possible.

    Returns:
        The page, and the token of the next one (``b""``: none).

    Raises:
        temporalio.service.RPCError: The server refused the query or the token.

    Added in 0.8.0.
    """
    while True:
        narrowed = await tenant_query(client, query, tenant)
        try:
            response = await client.workflow_service.list_workflow_executions(
                ListWorkflowExecutionsRequest(
                    namespace=client.namespace,
                    query=narrowed,
                    page_size=page_size,
                    next_page_token=token,
                ),
                # A token comes back from the caller: one the server cannot read fails
                # the same way every time (dev server: INTERNAL), so it is not retried.
                retry=not token,
            )
        except RPCError as exc:
            if narrowed == query or not _undefined_attribute(exc):
                raise
            _remember(client, False, exc.message)  # and ask again without the clause
            continue
        page = [_execution(client, info) for info in response.executions]
        return page, response.next_page_token


async def executions(
    client: Client, query: str = "", *, limit: int | None = None
) -> AsyncIterator[WorkflowExecution]:
    """The executions ``query`` matches (a visibility query), as ``list_workflows`` gives them.

    Args:
        client: A client of the namespace.
        query: A visibility query (``""``: every execution).
        limit: At most this many (``None``: all).

    Added in 0.5.0.
    """
    token = b""
    given = 0
    while True:
        response = await client.workflow_service.list_workflow_executions(
            ListWorkflowExecutionsRequest(
                namespace=client.namespace, query=query, page_size=_PAGE, next_page_token=token
            ),
            retry=True,
        )
        for info in response.executions:
            if limit is not None and given >= limit:
                return
            given += 1
            yield _execution(client, info)
        token = response.next_page_token
        if not token:
            return


def is_paused_execution(execution: WorkflowExecution) -> bool:
    """Whether a listed execution was paused when it was listed."""
    return execution.raw_info.status == PAUSED


def _execution(client: Client, info: WorkflowExecutionInfo) -> WorkflowExecution:
    if info.status in _KNOWN:
        return WorkflowExecution._from_raw_info(info, client.namespace, client.data_converter)
    readable = WorkflowExecutionInfo()
    readable.CopyFrom(info)
    readable.status = RawStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    execution = WorkflowExecution._from_raw_info(readable, client.namespace, client.data_converter)
    # The real status stays readable (``is_paused_execution``).
    return dataclasses.replace(execution, raw_info=info)
