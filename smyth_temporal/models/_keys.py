"""A provider's API key: from the argument, a ``secret(...)``, or the worker's variable."""

from __future__ import annotations

from pydantic import SecretStr

from smyth_temporal._redaction import register_secret
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.security import Secrets
from smyth_temporal.types.secrets import SecretRef

__all__ = ["MASKED_PLAIN_KEY_LENGTH", "provider_key"]

MASKED_PLAIN_KEY_LENGTH = 12
"""A key given as a plain string is masked in logs only from this length: endpoints
without keys take placeholders ("ollama", "EMPTY", "sk-test") that masking would cut
out of ordinary text. Keys given as ``secret(...)`` are always masked."""


def provider_key(
    api_key: str | SecretRef | None,
    found: SecretStr | None,
    secrets: Secrets | None,
    *,
    variable: str,
    missing: str,
) -> str:
    """The key a provider calls with, registered for masking.

    Args:
        api_key: The provider's argument: a key, ``secret("NAME")``, or ``None``.
        found: The worker's variable for it (``ModelSettings``), used without an argument.
        secrets: What resolves a ``secret("NAME")`` (default: ``Secrets.from_env()``).
        variable: The variable's name, under which a plain key is masked.
        missing: The refusal when there is no key.

    Raises:
        ConfigurationError: No key, or the secret named cannot be resolved.
    """
    if isinstance(api_key, SecretRef):
        # resolve() registers the value for masking itself.
        key: str | None = (secrets or Secrets.from_env()).resolve(api_key)
    else:
        key = api_key or (found.get_secret_value() if found is not None else None)
        if key and len(key) >= MASKED_PLAIN_KEY_LENGTH:
            register_secret(variable, key)
    if not key:
        raise ConfigurationError(missing)
    return key
