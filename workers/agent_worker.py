"""A worker process: ``python -m workers.agent_worker module:Class [...] [--model ...]``.

The same as ``smyth worker`` (same options, same runtime: ``smyth_temporal.worker``),
for deployments that prefer a module to a console script.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from smyth_temporal.cli.main import main as smyth

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the agents named in ``argv`` (default: ``sys.argv[1:]``) until stopped."""
    return smyth(["worker", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
