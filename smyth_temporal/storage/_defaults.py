"""The payload storage a client or worker gets when nothing else is said."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from temporalio.converter import ExternalStorage, PayloadCodec

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import payload_store_path
from smyth_temporal.storage._driver import ContentAddressedFileDriver

__all__ = [
    "DEFAULT_PAYLOAD_PATH",
    "DEFAULT_PAYLOAD_THRESHOLD",
    "default_payload_storage",
    "with_chunk_codec",
]

DEFAULT_PAYLOAD_PATH = Path(".smyth/payloads")
"""Where the content-addressed payload store lives (``SMYTH_PAYLOAD_PATH``), in the
project's directory (see ``settings.payload_store_path``).

Added in 0.2.0. Changed in 0.8.0: in the nearest directory up that has ``.smyth/``.
"""

DEFAULT_PAYLOAD_THRESHOLD = 2048
"""Payloads of at least this many bytes go to the store (``SMYTH_PAYLOAD_THRESHOLD``).

Measured with ``bench/history_bytes.py`` (50 steps, each a 4 KB tool result): a step
costs about 2,100 bytes of history however low the threshold goes (12 events of
bookkeeping and two 210-byte references); 256 saved 5 % more than 2,048 by also
storing the small tool calls, at one more file write per step. Up to 4,096 the
result was the same (2,241 bytes/step, 53x smaller than inline); at 8,192 the tool
results stayed inline (6,280 bytes/step). At 2 KiB a step stays under about 10 KB
even if four payloads sit just below the threshold, so 50 MB of history takes
over 5,000 steps: Temporal's 51,200-event limit (about 4,200 steps) comes first.
Small payloads (tool arguments, short answers) stay inline, where a reference
would save little and cost a file write.

Added in 0.2.0.
"""

_OFF = frozenset({"off", "0", "false", "no", "none"})
_ON = frozenset({"", "on", "1", "true", "yes", "fs"})


def default_payload_storage() -> ExternalStorage | None:
    """The content-addressed file store under ``.smyth/payloads``, or ``None`` when off.

    Read from the environment: ``SMYTH_PAYLOAD_STORAGE=off`` turns it off;
    ``SMYTH_PAYLOAD_PATH`` moves the store (relative paths are taken from the current
    directory, now), else it is ``.smyth/payloads`` in the nearest directory up that has
    ``.smyth/`` (``settings.payload_store_path``), and an environment (``SMYTH_ENV``)
    gets its own directory in it;
    ``SMYTH_PAYLOAD_THRESHOLD`` is the size in bytes from which a payload is stored
    (default ``DEFAULT_PAYLOAD_THRESHOLD``); ``SMYTH_PAYLOAD_CHUNKS=off`` stores every
    payload whole, the layout before 0.5.0, which workers older than 0.5.0 can read
    (keep it off until every worker and client has 0.5.0, then turn it on).

    Raises:
        ConfigurationError: ``SMYTH_PAYLOAD_STORAGE``, ``SMYTH_PAYLOAD_THRESHOLD`` or
            ``SMYTH_PAYLOAD_CHUNKS`` has a value that means nothing.

    Added in 0.2.0. Changed in 0.5.0: ``SMYTH_PAYLOAD_CHUNKS``. Changed in 0.8.0: the
    project's store from any of its directories.
    """
    setting = os.environ.get("SMYTH_PAYLOAD_STORAGE", "on").strip().lower()
    if setting in _OFF:
        return None
    if setting not in _ON:
        raise ConfigurationError(f"SMYTH_PAYLOAD_STORAGE must be 'on' or 'off', not {setting!r}")
    # Absolute, found the same way from any directory of the project: a process that
    # took a relative path from another directory would read another store.
    path = payload_store_path()
    raw = os.environ.get("SMYTH_PAYLOAD_THRESHOLD", "").strip()
    try:
        threshold = int(raw) if raw else DEFAULT_PAYLOAD_THRESHOLD
    except ValueError:
        threshold = -1
    if threshold < 0:
        raise ConfigurationError(
            f"SMYTH_PAYLOAD_THRESHOLD must be a number of bytes (0 or more), not {raw!r}"
        )
    chunks = os.environ.get("SMYTH_PAYLOAD_CHUNKS", "on").strip().lower()
    if chunks not in _ON | _OFF or chunks == "fs":
        raise ConfigurationError(f"SMYTH_PAYLOAD_CHUNKS must be 'on' or 'off', not {chunks!r}")
    driver = ContentAddressedFileDriver(path, chunked=chunks not in _OFF)
    return ExternalStorage(drivers=[driver], payload_size_threshold=threshold)


def with_chunk_codec(storage: ExternalStorage, codec: PayloadCodec | None) -> ExternalStorage:
    """``storage`` whose file drivers seal chunks with the data converter's ``codec``.

    Temporalio seals a payload before the store sees it; the chunked layout opens it
    and seals each chunk with the same codec (see ``ContentAddressedFileDriver``).
    Returned unchanged without a codec, when the drivers already have one, or when a
    ``driver_selector`` picks drivers (it names the instances it was given).
    """
    if codec is None or storage.driver_selector is not None:
        return storage
    drivers = [
        driver.with_codec(codec)
        if isinstance(driver, ContentAddressedFileDriver) and driver.codec is None
        else driver
        for driver in storage.drivers
    ]
    if all(new is old for new, old in zip(drivers, storage.drivers, strict=True)):
        return storage
    return dataclasses.replace(storage, drivers=drivers)
