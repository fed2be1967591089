"""External payload storage: keep large payloads out of Temporal history.

An agent's model activity carries the whole conversation on every step, so without
this its history grows quadratically and Temporal ends the run at 50 MB. With
temporalio's ``ExternalStorage`` on the data converter, payloads above a threshold go
to a store and history keeps a small reference; ``SmythPlugin`` sets it up.

- ``ContentAddressedFileDriver``: payloads as files named by their SHA-256, each
  distinct payload stored once (the embedded default, under ``.smyth/payloads``).
  Since 0.5.0 a conversation is stored as chunks shared between turns (one per
  message, roughly) under a small tree of digests, so the store grows with the new
  messages of a turn, not with the whole conversation again; payloads stored whole by
  earlier versions still read.
- ``default_payload_storage()``: that driver, configured from ``SMYTH_PAYLOAD_STORAGE``,
  ``SMYTH_PAYLOAD_PATH`` and ``SMYTH_PAYLOAD_THRESHOLD``.
- ``with_chunk_codec(storage, codec)``: the storage with the codec on its chunks too
  (the plugin and the codec server build it that way).
- ``inline_query_results(storage)``: the storage leaving a query's answer inline, since
  no history keeps it: ``QueryAnswers``, a worker interceptor, marks each answer
  ``QUERY_ONLY`` (``SmythPlugin`` installs both).
- Collecting garbage (``smyth storage gc``): ``stored_digests`` (the digests a history's
  payloads refer to), ``recorded_namespaces`` (the namespaces that wrote to the store),
  ``mark_and_sweep`` and ``store_stats``, ``read_mark`` and ``store_clock`` (the mark a
  collection leaves and the store's clock it is read against).
- Across machines, pass temporalio's S3 driver (``temporalio.contrib.aws.s3driver``) in
  ``SmythPlugin(payload_storage=ExternalStorage(...))``.

Added in 0.2.0.
"""

from smyth_temporal.storage._claims import stored_digests
from smyth_temporal.storage._defaults import (
    DEFAULT_PAYLOAD_PATH,
    DEFAULT_PAYLOAD_THRESHOLD,
    default_payload_storage,
    with_chunk_codec,
)
from smyth_temporal.storage._driver import DRIVER_NAME, ContentAddressedFileDriver
from smyth_temporal.storage._gc import mark_and_sweep, store_stats
from smyth_temporal.storage._inline import INLINE_QUERY_MAX, QUERY_ONLY, inline_query_results
from smyth_temporal.storage._mark import read_mark, store_clock
from smyth_temporal.storage._namespaces import recorded_namespaces
from smyth_temporal.storage._query_answers import QueryAnswers

__all__ = [
    "DEFAULT_PAYLOAD_PATH",
    "DEFAULT_PAYLOAD_THRESHOLD",
    "DRIVER_NAME",
    "INLINE_QUERY_MAX",
    "QUERY_ONLY",
    "ContentAddressedFileDriver",
    "QueryAnswers",
    "default_payload_storage",
    "inline_query_results",
    "mark_and_sweep",
    "read_mark",
    "recorded_namespaces",
    "store_clock",
    "store_stats",
    "stored_digests",
    "with_chunk_codec",
]
