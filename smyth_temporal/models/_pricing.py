"""The worker's price table: ``SMYTH_PRICES_FILE``, or ``.smyth/prices.toml`` if it exists.

A TOML (or JSON) file, one table per model name or glob, prices per million tokens:

```toml
["gpt-4o-mini*"]
input = 0.15
cached_input = 0.075
output = 0.60

["anthropic:claude-sonnet-4-5*"]
input = 3.0
cached_input = 0.30   # cache reads
cache_write = 3.75    # cache writes (1.25x input; 2x with the 1-hour TTL)
output = 15.0
```

Models without a price cost nothing: no run or tenant budget stops them.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import ValidationError

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import DEFAULT_PRICES_FILE, PRICES_FILE_ENV, ModelSettings
from smyth_temporal.types.budget import PriceTable

__all__ = ["DEFAULT_PRICES_FILE", "PRICES_FILE_ENV", "load_price_table"]


def load_price_table(path: Path | str | None = None) -> PriceTable:
    """The price table in ``path`` (default: ``SMYTH_PRICES_FILE``, then ``.smyth/prices.toml``).

    Raises:
        ConfigurationError: The file named cannot be read, or is not a price table.

    Added in 0.5.0. Changed in 0.9.0: the default from ``ModelSettings``.
    """
    named = path or ModelSettings.load().prices_file
    file = Path(named) if named else DEFAULT_PRICES_FILE
    if not named and not file.exists():
        return PriceTable()
    try:
        text = file.read_text()
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
        return PriceTable.model_validate({"prices": data})
    except OSError as exc:
        raise ConfigurationError(f"cannot read the price table {file}: {exc}") from exc
    except (ValueError, ValidationError) as exc:
        raise ConfigurationError(f"{file} is not a price table: {exc}") from exc
