"""``Secrets``: credentials resolved on the worker, from its environment or a secrets file."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from smyth_temporal._files import read_private_file
from smyth_temporal._redaction import register_secret
from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.settings import ALLOWED_SECRETS_ENV, SECRETS_FILE_ENV, SecretsSettings
from smyth_temporal.types.secrets import SECRET_NAME_PATTERN, SecretRef

__all__ = [
    "ALLOWED_SECRETS_ENV",
    "SECRETS_FILE_ENV",
    "EnvSecrets",
    "FileSecrets",
    "SecretBackend",
    "Secrets",
]


@runtime_checkable
class SecretBackend(Protocol):
    """Where secret values come from.

    Implement ``get`` over Vault, AWS Secrets Manager or a KMS-backed store and pass
    it to ``Secrets(backends=[...])``; the first backend that knows a name wins.

    Added in 0.4.0.
    """

    def get(self, name: str) -> str | None:
        """The value of ``name``, or ``None`` if this backend does not have it."""
        ...


class EnvSecrets:
    """Secrets from the worker's environment variables.

    Added in 0.4.0.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """Read from ``environ`` (default: ``os.environ``, read at each lookup)."""
        self._environ = environ

    def get(self, name: str) -> str | None:
        """The variable ``name``, or ``None``."""
        # The one read of the environment outside smyth_temporal.settings: a secret's
        # name is chosen by a tool, not by smyth, so no settings model can list it.
        return (os.environ if self._environ is None else self._environ).get(name)


class FileSecrets:
    """Secrets from an owner-only file, read once: ``NAME=value`` lines or a JSON object.

    Lines: ``#`` starts a comment, blank lines are skipped, and a value wrapped in one
    pair of matching quotes loses them (as in ``.env`` files). JSON: a file that
    starts with ``{`` (after blanks) is one object of names to string values.

    Added in 0.4.0.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Read the file.

        Raises:
            ConfigurationError: It is missing, readable by group or others (as ssh
                refuses such keys), or holds something that is not a name and a value.
        """
        file = Path(path)
        text = read_private_file(file, "the secrets file")
        pairs = (
            _json_pairs(file, text) if text.lstrip().startswith("{") else _line_pairs(file, text)
        )
        self._values: dict[str, str] = {}
        for where, name, value in pairs:
            if not re.match(SECRET_NAME_PATTERN, name):
                raise ConfigurationError(
                    f"{where}: {name!r} is not a secret name (like WEATHER_KEY)"
                )
            self._values[name] = value

    def get(self, name: str) -> str | None:
        """The value of ``name`` in the file, or ``None``."""
        return self._values.get(name)


def _line_pairs(file: Path, text: str) -> list[tuple[str, str, str]]:
    pairs = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ConfigurationError(f"{file}:{number}: expected NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        pairs.append((f"{file}:{number}", name.strip(), value))
    return pairs


def _json_pairs(file: Path, text: str) -> list[tuple[str, str, str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The message names the position only: the document may be a secret's value.
        raise ConfigurationError(f"{file}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigurationError(f"{file}: expected a JSON object of names to string values")
    return [(str(file), name, value) for name, value in data.items()]


class Secrets:
    """What a worker resolves ``secret("NAME")`` references with, and may hand out.

    Every value resolved is registered for redaction: logs, tool results and error
    messages show ``[secret:NAME]`` in its place (see ``smyth_temporal._redaction``).

    Added in 0.4.0.
    """

    def __init__(
        self,
        backends: Iterable[SecretBackend] | None = None,
        *,
        allow: Iterable[str] | None = None,
    ) -> None:
        """Create the resolver.

        Args:
            backends: Where to look, first match wins (default: the environment).
            allow: The only names this worker hands out (``None``: those its tools,
                MCP servers and model providers declare; see ``SmythPlugin``).

        Raises:
            ConfigurationError: An allowed name is not like ``WEATHER_KEY``.
        """
        self._backends = list(backends) if backends is not None else [EnvSecrets()]
        self._allow = frozenset(allow) if allow is not None else None
        bad = sorted(n for n in self._allow or () if not re.match(SECRET_NAME_PATTERN, n))
        if bad:
            raise ConfigurationError(
                f"cannot allow {bad}: secret names look like WEATHER_KEY (A-Z, 0-9, _)"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Secrets:
        """``SMYTH_SECRETS_FILE`` (then the environment) and ``SMYTH_ALLOWED_SECRETS``.

        Raises:
            ConfigurationError: The secrets file is unreadable, open to others or malformed.
        """
        settings = (
            SecretsSettings.load() if environ is None else SecretsSettings.from_environ(environ)
        )
        return cls.from_settings(settings, environ=environ)

    @classmethod
    def from_settings(
        cls, settings: SecretsSettings, *, environ: Mapping[str, str] | None = None
    ) -> Secrets:
        """The secrets file of ``settings``, then ``environ`` (default: the environment).

        Allowed ``settings.allowed_secrets`` (``None``: what the worker declares).

        Raises:
            ConfigurationError: The secrets file is unreadable, open to others or malformed.

        Added in 0.9.0.
        """
        backends: list[SecretBackend] = []
        if settings.secrets_file is not None:
            backends.append(FileSecrets(settings.secrets_file))
        backends.append(EnvSecrets(environ))
        return cls(backends, allow=settings.allowed_secrets)

    @property
    def allowed(self) -> frozenset[str] | None:
        """The allow-list, or ``None`` when it is what the worker declares."""
        return self._allow

    def restrict(self, declared: Iterable[str]) -> Secrets:
        """This resolver, allowed exactly ``declared`` if no allow-list was given.

        A worker calls it at start, so that a secret it could never hand out stops
        it there rather than failing each tool call.

        Raises:
            ConfigurationError: A declared name is not on the given allow-list, or no
                backend has it.
        """
        names = frozenset(declared)
        outside = sorted(names - self._allow) if self._allow is not None else []
        if outside:
            raise ConfigurationError(
                f"secrets {outside} are used by this worker's tools, MCP servers or models but "
                f"not allowed; add them to {ALLOWED_SECRETS_ENV} (or smyth worker --allow-secret)"
            )
        # Only whether a value exists: values are read when used, so rotation applies.
        missing = sorted(n for n in names if not any(b.get(n) for b in self._backends))
        if missing:
            raise ConfigurationError(
                f"secrets {missing} are used by this worker's tools or MCP servers but not set "
                f"(environment or {SECRETS_FILE_ENV} / smyth worker --secrets-file)"
            )
        return Secrets(self._backends, allow=names) if self._allow is None else self

    def resolve(self, ref: SecretRef | str) -> str:
        """The value of a reference (formatted), registered for redaction.

        Raises:
            ConfigurationError: The name is not allowed on this worker, or no backend
                has it. Both name the secret, never a value.
        """
        ref = ref if isinstance(ref, SecretRef) else SecretRef(name=ref)
        if self._allow is not None and ref.name not in self._allow:
            raise ConfigurationError(
                f"secret {ref.name} is not allowed on this worker; allow it with "
                f"{ALLOWED_SECRETS_ENV} or smyth worker --allow-secret {ref.name}"
            )
        for backend in self._backends:
            value = backend.get(ref.name)
            if value:  # an empty value is a variable set by mistake, not a credential
                register_secret(ref.name, value)
                formatted = ref.format.replace("{}", value)
                register_secret(ref.name, formatted)
                return formatted
        raise ConfigurationError(
            f"secret {ref.name} is not set on this worker (environment or {SECRETS_FILE_ENV})"
        )

    def values(self, names: Iterable[str]) -> dict[str, str]:
        """The values of ``names``, by name (what ``tool_context().secrets`` holds)."""
        return {name: self.resolve(name) for name in names}
