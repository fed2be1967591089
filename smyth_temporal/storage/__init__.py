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
- Across machines, pass temporalio's S3 driver (``temporalio.contrib.aws.s3driver``) in
  ``SmythPlugin(payload_storage=ExternalStorage(...))``.

Added in 0.2.0.
"""

from smyth_temporal.storage._defaults import (
    DEFAULT_PAYLOAD_PATH,
    DEFAULT_PAYLOAD_THRESHOLD,
    default_payload_storage,
)
from smyth_temporal.storage._driver import DRIVER_NAME, ContentAddressedFileDriver

__all__ = [
    "DEFAULT_PAYLOAD_PATH",
    "DEFAULT_PAYLOAD_THRESHOLD",
    "DRIVER_NAME",
    "ContentAddressedFileDriver",
    "default_payload_storage",
]
