"""The payload storage a client or worker gets when nothing else is said."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from temporalio.converter import ExternalStorage, PayloadCodec

from smyth_temporal.settings import DEFAULT_PAYLOAD_THRESHOLD, PayloadSettings
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


def default_payload_storage(settings: PayloadSettings | None = None) -> ExternalStorage | None:
    """The content-addressed file store under ``.smyth/payloads``, or ``None`` when off.

    Configured by ``settings`` (default: ``PayloadSettings.load()``, from the
    environment): ``SMYTH_PAYLOAD_STORAGE=off`` turns it off; ``SMYTH_PAYLOAD_PATH``
    moves the store (relative paths are taken from the current directory, now), else it
    is ``.smyth/payloads`` in the nearest directory up that has ``.smyth/``
    (``PayloadSettings.store_path``), and an environment (``SMYTH_ENV``) gets its own
    directory in it; ``SMYTH_PAYLOAD_THRESHOLD`` is the size in bytes from which a
    payload is stored (default ``DEFAULT_PAYLOAD_THRESHOLD``); ``SMYTH_PAYLOAD_CHUNKS=off``
    stores every payload whole, the layout before 0.5.0, which workers older than 0.5.0
    can read (keep it off until every worker and client has 0.5.0, then turn it on).

    Raises:
        ConfigurationError: ``SMYTH_PAYLOAD_STORAGE``, ``SMYTH_PAYLOAD_THRESHOLD`` or
            ``SMYTH_PAYLOAD_CHUNKS`` has a value that means nothing.

    Added in 0.2.0. Changed in 0.5.0: ``SMYTH_PAYLOAD_CHUNKS``. Changed in 0.8.0: the
    project's store from any of its directories. Changed in 0.9.0: ``settings``.
    """
    settings = settings if settings is not None else PayloadSettings.load()
    if not settings.payload_storage:
        return None
    # Absolute, found the same way from any directory of the project: a process that
    # took a relative path from another directory would read another store.
    driver = ContentAddressedFileDriver(settings.store_path(), chunked=settings.payload_chunks)
    return ExternalStorage(drivers=[driver], payload_size_threshold=settings.payload_threshold)


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
