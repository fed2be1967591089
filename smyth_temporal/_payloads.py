"""Payload helpers: every ``Payload`` in a message, and a pydantic converter that caches.

``payloads_in`` walks a protobuf message (a history event, a whole history);
``PydanticConverter`` is temporalio's pydantic payload converter with its type adapters
kept across the copies temporalio makes of it, which marks the payloads of query-only
types (``QUERY_ONLY``) so the payload store leaves them inline.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Final

from google.protobuf.message import Message
from pydantic import TypeAdapter
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, PydanticPayloadConverter

__all__ = ["QUERY_ONLY", "QUERY_ONLY_ATTRIBUTE", "PydanticConverter", "payloads_in"]

QUERY_ONLY: Final = "smyth-query-only"
"""Metadata of a payload only a query answers (never recorded in history): the payload
store keeps it inline (``smyth_temporal.storage.inline_query_results``)."""

QUERY_ONLY_ATTRIBUTE: Final = "__smyth_query_only__"
"""A class attribute: ``True`` on a type that is only ever a query's answer."""


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


class _JSONConverter(PydanticJSONPlainPayloadConverter):
    """Pydantic's JSON converter, marking the payloads of query-only types."""

    def to_payload(self, value: Any) -> Payload | None:
        payload = super().to_payload(value)
        if payload is not None and getattr(type(value), QUERY_ONLY_ATTRIBUTE, False) is True:
            payload.metadata[QUERY_ONLY] = b"1"
        return payload


class PydanticConverter(PydanticPayloadConverter):
    """``PydanticPayloadConverter`` whose type adapters outlive the instance, outside workflows.

    A value whose type sets ``__smyth_query_only__ = True`` (``AgentState``) is written
    with ``QUERY_ONLY`` metadata.
    """

    def __init__(self) -> None:
        super().__init__()
        marking = _JSONConverter()
        if not (workflow.in_workflow() or workflow.unsafe.in_sandbox()):
            # A workflow's converter keeps its own (see ``_TYPE_ADAPTERS``).
            marking._type_adapter = _TYPE_ADAPTERS
        self.converters = {
            encoding: marking
            if isinstance(converter, PydanticJSONPlainPayloadConverter)
            else converter
            for encoding, converter in self.converters.items()
        }
