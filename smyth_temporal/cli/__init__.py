"""The ``smyth`` command line: run a dev server, workers and agents from a shell.

``smyth dev`` starts the embedded Temporal dev server (SQLite file under ``.smyth/``),
``smyth worker module:Class`` serves agents, ``smyth run`` / ``state`` / ``result``
start and inspect runs. ``python -m smyth_temporal.cli`` is the same program.

Added in 0.1.0.
"""

__all__: list[str] = []
