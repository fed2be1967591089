"""``python -m smyth_temporal.cli``: the ``smyth`` command."""

from smyth_temporal.cli.main import main

raise SystemExit(main())
