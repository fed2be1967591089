"""Owner-only directories for what smyth keeps on disk (payloads, memory, keys)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from smyth_temporal.exceptions import ConfigurationError

__all__ = ["private_dir"]

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
