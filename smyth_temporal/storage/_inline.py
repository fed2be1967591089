"""Query answers stay inline: ``inline_query_results``.

temporalio's ``ExternalStorage`` sees every payload a worker sends, a query's answer
included, and stores any above its threshold. A query's answer is never recorded in
history, so storing it keeps nothing small: it only writes a file (sealed again chunk by
chunk under encryption) that the caller reads back at once, and that no history refers
to. ``AgentState`` is such an answer, read by every ``state`` query (the console, the
CLI, the gateway's runs and snapshots): stored, it took a run's ``state`` query from
8 to 21 ms p50 right after a reply, and wrote a file for each state read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final

from temporalio.api.common.v1 import Payload
from temporalio.converter import ExternalStorage, StorageDriver, StorageDriverSelectContext

from smyth_temporal._payloads import QUERY_ONLY

__all__ = ["INLINE_QUERY_MAX", "QUERY_ONLY", "inline_query_results"]

Selector = Callable[[StorageDriverSelectContext, Payload], StorageDriver | None]

INLINE_QUERY_MAX: Final = 1024 * 1024
"""The largest query-only payload kept inline (bytes); a larger one is stored, so an
answer stays well under gRPC's 4 MB message limit."""


@dataclasses.dataclass(frozen=True)
class _InlineQueryResults:
    """A ``driver_selector``: query-only payloads inline, the rest as ``chosen`` picks."""

    drivers: tuple[StorageDriver, ...]
    chosen: Selector | None
    """The selector it wraps (``None``: the one driver)."""

    def __call__(
        self, context: StorageDriverSelectContext, payload: Payload
    ) -> StorageDriver | None:
        if payload.metadata.get(QUERY_ONLY) == b"1" and payload.ByteSize() <= INLINE_QUERY_MAX:
            return None
        if self.chosen is None:
            return self.drivers[0]
        return self.chosen(context, payload)


def inline_query_results(storage: ExternalStorage) -> ExternalStorage:
    """``storage`` leaving query-only payloads inline (``smyth_temporal._payloads.QUERY_ONLY``).

    Up to ``INLINE_QUERY_MAX`` bytes; every other payload goes where ``storage`` sends
    it. Applying it twice changes nothing.

    Added in 0.11.0.
    """
    if isinstance(storage.driver_selector, _InlineQueryResults):
        return storage
    selector = _InlineQueryResults(tuple(storage.drivers), storage.driver_selector)
    return dataclasses.replace(storage, driver_selector=selector)
