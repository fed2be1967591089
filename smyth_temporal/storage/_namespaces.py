"""The namespaces a payload store holds payloads for, as the store itself records them.

One store may serve several namespaces (every process with the same
``SMYTH_PAYLOAD_PATH``), and equal payloads of different namespaces share a file.
A file may therefore be removed only once no history of *any* of them refers to it.
The driver records each namespace it stores a payload for, in
``<root>/namespaces/<the name's UTF-8 in hex>`` (an empty file, written once per
process before the first reference for that namespace leaves it), so garbage
collection knows every namespace it must read, including ones its own server does
not have.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from smyth_temporal._files import private_dir

__all__ = ["NAMESPACES_DIR", "record_namespace", "recorded_namespaces"]

NAMESPACES_DIR = "namespaces"


def record_namespace(root: Path, namespace: str) -> None:
    """Note that the store at ``root`` holds payloads for ``namespace`` (blocking)."""
    folder = private_dir(root) / NAMESPACES_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    marker = folder / namespace.encode().hex()
    if not marker.exists():
        with contextlib.suppress(FileExistsError):  # another process, just now
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def recorded_namespaces(root: Path) -> list[str]:
    """The namespaces the store at ``root`` has recorded, sorted.

    Raises:
        ValueError: An entry's name is not a namespace the driver wrote (hex UTF-8).
    """
    folder = root / NAMESPACES_DIR
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        try:
            found.append(bytes.fromhex(entry.name).decode())
        except (ValueError, UnicodeDecodeError):
            raise ValueError(
                f"{entry} is not a namespace entry of the payload store (its name must be "
                "a namespace's UTF-8 in hex)"
            ) from None
    return sorted(found)
