"""Owner-only directories for what smyth keeps on disk (payloads, memory, keys)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from smyth_temporal.exceptions import ConfigurationError

__all__ = ["private_dir", "read_private_file", "write_atomically"]

_OWNER_ONLY = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by its owner only; tighten it if it exists.

    The payload store, the embedded memory and the key file hold conversations and
    credentials: on a shared machine nobody else may list or read them, whatever the
    process's umask. A symlink in place of the directory is refused, so a store cannot
    be redirected to somewhere its owner did not choose.

    Raises:
        ConfigurationError: ``path`` is a symlink or not a directory, or cannot be
            created or tightened.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        try:
            path.mkdir(parents=True, exist_ok=True, mode=_OWNER_ONLY)
            info = os.lstat(path)
        except OSError as exc:
            raise ConfigurationError(f"cannot create {path}: {exc}") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ConfigurationError(f"{path} must be a directory, not a symlink or a file")
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(path, stat.S_IMODE(info.st_mode) & _OWNER_ONLY)
        except OSError as exc:
            raise ConfigurationError(f"cannot make {path} owner-only: {exc}") from None
    return path


def read_private_file(path: Path, what: str) -> str:
    """The text of a file of credentials, refused if others may read it (as ssh does).

    Args:
        path: The file.
        what: What it is, for the messages ("the secrets file").

    Raises:
        ConfigurationError: It cannot be read, or group or others have any access.
    """
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {what} {path}: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(f"{what} {path} is readable by others; chmod 600 {path}")
    return text


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: owner-only, synced, then renamed into place.

    A crash leaves the old file or the new one, never a truncated one; ``mkstemp``
    creates the temporary file owner-only (0600), beside ``path`` so the rename is atomic.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
