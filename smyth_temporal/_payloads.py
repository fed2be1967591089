"""Payload helpers: every ``Payload`` in a message, and a pydantic converter that caches.

``payloads_in`` walks a protobuf message (a history event, a whole history);
``PydanticConverter`` is temporalio's pydantic payload converter with its type adapters
kept across the copies temporalio makes of it. ``QUERY_ONLY`` marks a query's answer.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Final

from google.protobuf.message import Message
from pydantic import TypeAdapter
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, PydanticPayloadConverter

__all__ = ["QUERY_ONLY", "PydanticConverter", "payloads_in"]

QUERY_ONLY: Final = "smyth-query-only"
"""Metadata of a query's answer (never recorded in history): the payload store keeps it
inline (``smyth_temporal.storage.inline_query_results``)."""


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every payload in ``message``, depth first (maps and repeated fields included).

    History events keep payloads in many places (inputs, results, failures' details,
    headers, memos, update requests); walking the message finds them all without a
    list of event types that a new server version would outgrow.
    """
    if isinstance(message, Payload):
        yield message
        return
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if isinstance(value, Message):
            yield from payloads_in(value)
            continue
        for item in value.values() if hasattr(value, "values") else value:
            if isinstance(item, Message):
                yield from payloads_in(item)


_TYPE_ADAPTERS = functools.lru_cache(maxsize=1024)(TypeAdapter)
"""The pydantic type adapters of every converter outside workflow code, by type.

temporalio copies the data converter for each client call when payload storage is set
(``DataConverter._with_store_context``), and each copy builds a new payload converter:
its own cache was always empty, so every query or update result built its type's schema
again (a streamed reply's stream reads: about a sixth of the gateway's busy time). A
workflow's converter keeps its own: a sandbox imports the run's types afresh, and a
shared cache would hold each run's modules."""


class PydanticConverter(PydanticPayloadConverter):
    """``PydanticPayloadConverter`` whose type adapters outlive the instance, outside workflows."""

    def __init__(self) -> None:
        super().__init__()
        if workflow.in_workflow() or workflow.unsafe.in_sandbox():
            return
        for converter in self.converters.values():
            if isinstance(converter, PydanticJSONPlainPayloadConverter):
                converter._type_adapter = _TYPE_ADAPTERS
