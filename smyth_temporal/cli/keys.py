"""``smyth keys create``, ``list`` and ``revoke``: the gateway's API keys.

Keys live in one JSON file (``--keys-file``, ``SMYTH_KEYS_FILE``, default
``.smyth/keys.json``), owner-only, hashed: a new key is printed once, alone on its
line, and cannot be shown again. The gateway reads the file on every change, so a
revoked key is refused at once by every replica that shares it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from smyth_temporal.cli._common import non_empty, status
from smyth_temporal.cli._output import table
from smyth_temporal.security import ApiKey, KeyStore

__all__ = ["app"]

app = typer.Typer(
    help="Create, list and revoke the API keys of the HTTP gateway (`smyth serve`). "
    "Each key reaches one tenant with one role: viewer (reads), operator (also starts runs, "
    "sends messages, interrupts), approver (also decides approvals), admin (everything).",
    no_args_is_help=True,
)

_KeysFile = Annotated[
    Path | None,
    typer.Option(
        "--keys-file",
        metavar="PATH",
        help="the key file (default: SMYTH_KEYS_FILE or .smyth/keys.json)",
    ),
]


def _store(path: Path | None) -> KeyStore:
    return KeyStore(path)


@app.command("create", help="Create a key and print it, alone on its line (shown only once).")
def create(
    tenant: Annotated[
        str, typer.Option("--tenant", parser=non_empty, help="the only tenant the key reaches")
    ],
    role: Annotated[
        str,
        typer.Option(
            "--role", metavar="[viewer|operator|approver|admin]", help="what the key may do"
        ),
    ],
    name: Annotated[
        str,
        typer.Option(
            "--name",
            parser=non_empty,
            help="who holds it; recorded as the approver of its decisions",
        ),
    ],
    keys_file: _KeysFile = None,
) -> None:
    """Create an API key."""
    store = _store(keys_file)
    record, secret = store.create(tenant=tenant, role=role, name=name)
    print(secret, flush=True)
    status(
        f"created {record.id} ({record.name}: tenant {record.tenant}, role {record.role}) in "
        f"{store.path}; the key is shown only this once"
    )


@app.command("list", help="List the keys (never the keys themselves).")
def list_keys(
    keys_file: _KeysFile = None,
    json_: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """List API keys."""
    keys = _store(keys_file).list_keys()
    if json_:
        shown = [k.model_dump(mode="json", exclude={"sha256"}) for k in keys]
        print(json.dumps(shown, indent=2))
    elif keys:
        print(table([("ID", "NAME", "TENANT", "ROLE", "CREATED", "STATE"), *map(_row, keys)]))
    else:
        status("no keys; create one with `smyth keys create --tenant T --role R --name N`")


def _row(key: ApiKey) -> tuple[str, ...]:
    created = key.created_at.strftime("%Y-%m-%d %H:%M")
    state = "active" if key.revoked_at is None else f"revoked {key.revoked_at:%Y-%m-%d %H:%M}"
    return (key.id, key.name, key.tenant, key.role, created, state)


@app.command("revoke", help="Revoke a key by name (an active one) or id; it is refused at once.")
def revoke(
    name_or_id: Annotated[
        str, typer.Argument(metavar="NAME_OR_ID", parser=non_empty, help="the key's name or id")
    ],
    keys_file: _KeysFile = None,
) -> None:
    """Revoke an API key."""
    key = _store(keys_file).revoke(name_or_id)
    print(f"revoked {key.id} ({key.name}: tenant {key.tenant}, role {key.role})")
