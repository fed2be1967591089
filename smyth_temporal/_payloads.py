"""Every ``Payload`` inside a protobuf message (a history event, a whole history)."""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload

__all__ = ["payloads_in"]


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
