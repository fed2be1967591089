"""API keys: the store, the brake on failed attempts, ``smyth keys`` and ``smyth serve``'s
refusal to run without keys (or, with ``--insecure-dev``, anywhere but loopback)."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from smyth_temporal.exceptions import ConfigurationError
from smyth_temporal.gateway import KeyStore
from smyth_temporal.security import AuthLimiter, Principal
from tests.helpers.cli_support import (
    PROCESS_TIMEOUT,
    ROOT,
    assert_one_error_line,
    free_port,
    run_smyth,
    stop_process,
)


def test_a_key_is_random_shown_once_and_stored_hashed_owner_only(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    record, secret = store.create(tenant="acme", role="approver", name="alice")
    _, other = store.create(tenant="acme", role="viewer", name="bob")

    assert secret.startswith("smyth_") and len(secret) > 40 and secret != other
    text = store.path.read_text()
    assert secret not in text and record.sha256 in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left over
    assert store.authenticate(secret) == record
    assert store.authenticate(secret + "x") is None
    assert [k.name for k in store.list_keys()] == ["alice", "bob"]


def test_names_tenants_and_roles_are_checked(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys.json")
    store.create(tenant="acme", role="admin", name="ops")
    with pytest.raises(ConfigurationError, match="an active key named 'ops' exists already"):
        store.create(tenant="acme", role="admin", name="ops")
    # A dash would make two tenants' session workflow ids collide.
    with pytest.raises(ConfigurationError, match="invalid tenant 'acme-corp'"):
        store.create(tenant="acme-corp", role="admin", name="x")
    with pytest.raises(ConfigurationError, match="invalid role 'root'"):
        store.create(tenant="acme", role="root", name="x")
    with pytest.raises(ConfigurationError, match="no active key named 'nobody'"):
        store.revoke("nobody")


def test_a_revoked_key_is_refused_by_every_store_reading_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    gateway_side, admin_side = KeyStore(path), KeyStore(path)
    record, secret = admin_side.create(tenant="acme", role="operator", name="ci")
    assert gateway_side.authenticate(secret) == record  # created after the first read: seen
    revoked = admin_side.revoke("ci")
    assert revoked.revoked_at is not None
    assert gateway_side.authenticate(secret) is None
    # Revoked keys stay listed (audit); the name may be used again, the id names the old one.
    _, again = admin_side.create(tenant="acme", role="operator", name="ci")
    assert gateway_side.authenticate(again) is not None
    assert admin_side.revoke(record.id).id == record.id
    assert [k.active for k in admin_side.list_keys()] == [False, True]


def test_the_limiter_is_a_token_bucket_per_address() -> None:
    now = [0.0]
    limiter = AuthLimiter(burst=3, refill=0.5, clock=lambda: now[0])
    for _ in range(3):
        assert limiter.retry_after("10.0.0.1") is None
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == pytest.approx(2.0)
    assert limiter.retry_after("10.0.0.2") is None  # another address is not affected
    now[0] = 2.0
    assert limiter.retry_after("10.0.0.1") is None


def test_roles_grant_what_the_issue_says() -> None:
    grants = {
        role: [
            p for p in ("read", "operate", "approve", "admin") if Principal("k", "t", role).may(p)
        ]  # type: ignore[arg-type]
        for role in ("viewer", "operator", "approver", "admin")
    }
    assert grants == {
        "viewer": ["read"],
        "operator": ["read", "operate"],
        "approver": ["read", "approve"],
        "admin": ["read", "operate", "approve", "admin"],
    }


def test_smyth_keys_create_list_revoke(tmp_path: Path) -> None:
    env = {"SMYTH_KEYS_FILE": str(tmp_path / "keys.json")}
    created = run_smyth(
        "keys", "create", "--tenant", "acme", "--role", "admin", "--name", "ops", env=env
    )
    assert created.code == 0, created.err
    [secret] = created.out.splitlines()  # the key alone on its line
    assert secret.startswith("smyth_")
    assert "shown only this once" in created.err

    listed = run_smyth("keys", "list", env=env)
    assert listed.code == 0 and "ops" in listed.out and "active" in listed.out
    assert secret not in listed.out
    as_json = run_smyth("keys", "list", "--json", env=env).json()
    assert [(k["name"], k["tenant"], k["role"]) for k in as_json] == [("ops", "acme", "admin")]
    assert "sha256" not in as_json[0]

    revoked = run_smyth("keys", "revoke", "ops", env=env)
    assert revoked.code == 0 and revoked.out.startswith(f"revoked {as_json[0]['id']}")
    assert KeyStore(tmp_path / "keys.json").authenticate(secret) is None
    assert_one_error_line(run_smyth("keys", "revoke", "ops", env=env), "no active key named 'ops'")
    assert_one_error_line(
        run_smyth("keys", "create", "--tenant", "a-b", "--role", "admin", "--name", "x", env=env),
        "invalid tenant 'a-b'",
    )


def test_serve_refuses_to_start_without_a_key(tmp_path: Path, address: str) -> None:
    outcome = run_smyth(
        "serve",
        "Analyst",
        "--address",
        address,
        env={"SMYTH_KEYS_FILE": str(tmp_path / "none.json")},
    )
    assert_one_error_line(outcome, "no active API key in")


def test_serve_insecure_dev_binds_and_answers_loopback_only_against_dns_rebinding(
    tmp_path: Path, address: str
) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [
                *(
                    sys.executable,
                    "-m",
                    "smyth_temporal.cli",
                    "serve",
                    "tests.helpers.agents:Analyst",
                ),
                *("--insecure-dev", "--host", "0.0.0.0", "--port", str(port)),
                *("--address", address, "--keys-file", str(tmp_path / "none.json")),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while "gateway.ready" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        answer = httpx.get(f"{url}/openai/v1/models", timeout=10)
        # DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its
        # own name in Host. Only this machine's loopback names, on this port, pass.
        hosts = {
            host: httpx.get(f"{url}/v1/runs", headers={"Host": host}, timeout=10).status_code
            for host in (
                f"localhost:{port}",
                f"[::1]:{port}",
                f"127.0.0.1:{port}",
                f"rebound.example:{port}",
                f"localhost.rebound.example:{port}",
                f"127.0.0.1:{port + 1}",
                "localhost",
                "",
            )
        }
        refused = httpx.get(url + "/v1/runs", headers={"Host": f"evil.example:{port}"})
    finally:
        stop_process(process)
    text = log.read_text()
    assert "--insecure-dev binds 127.0.0.1 only, not 0.0.0.0" in text
    assert "act as tenant 'default' with role admin" in text
    assert answer.status_code == 200
    assert [m["id"] for m in answer.json()["data"]] == ["Analyst"]
    assert [host for host, status in hosts.items() if status == 200] == [
        f"localhost:{port}",
        f"[::1]:{port}",
        f"127.0.0.1:{port}",
    ]
    assert set(hosts.values()) == {200, 421}
    assert refused.headers["content-type"] == "application/problem+json"
    assert "Host 'evil.example:" in refused.json()["detail"]


def test_importing_the_gateway_without_its_extra_says_how_to_install_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['fastapi'] = None\n"  # what an absent package looks like to import
        "try:\n"
        "    import smyth_temporal.gateway\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert "pip install 'smyth-temporal[server]'" in done.stdout
    # The CLI itself still works (keys need no extra: every interface reads them), and
    # `smyth serve` says the same in one line.
    outcome_code = (
        "import sys\n"
        "sys.modules['fastapi'] = None\n"
        "from smyth_temporal.cli.main import main\n"
        "assert main(['keys', 'list', '--keys-file', '/nonexistent/keys.json']) == 0\n"
        "sys.exit(main(['serve', 'Analyst']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", outcome_code], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1:] == [
        "smyth: error: smyth_temporal.gateway needs the server extra: "
        "pip install 'smyth-temporal[server]'"
    ]
