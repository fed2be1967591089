"""The web console over plain HTTP: its pages hold no data, and the runs list it reads."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient
from smyth_temporal.gateway import GatewayOptions, create_app
from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.gateway_support import (
    OTHER,
    SERVED,
    TENANT,
    Keys,
    bearer,
    gateway,
    make_keys,
    pending_approvals,
)
from tests.helpers.trader import Trader

ASSETS = ("static/console.js", "static/console.css")


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


@pytest.fixture
async def asgi(agents: AgentClient, keys: Keys) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(agents, SERVED, keys=keys.store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        yield http


async def test_the_console_is_served_without_a_key_and_holds_no_data(
    asgi: httpx.AsyncClient, keys: Keys
) -> None:
    page = await asgi.get("/console/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    # The same bytes with and without a key: the page is a shell, the data comes later.
    keyed = await asgi.get("/console/", headers=keys.headers("admin"))
    assert keyed.content == page.content
    assert TENANT not in page.text and "smyth_" not in page.text
    for asset in ASSETS:
        answer = await asgi.get(f"/console/{asset}")
        assert answer.status_code == 200, asset
        assert answer.headers["content-security-policy"] == csp
    assert (
        (await asgi.get("/console/static/console.js"))
        .headers["content-type"]
        .startswith("text/javascript")
    )


async def test_the_console_uses_relative_urls_only(asgi: httpx.AsyncClient) -> None:
    """Under a proxy's path prefix (``/smyth/console/``) every URL must stay under it."""
    redirect = await asgi.get("/console", follow_redirects=False)
    assert (redirect.status_code, redirect.headers["location"]) == (308, "console/")
    page = (await asgi.get("/console/")).text
    assert re.findall(r'(?:src|href)="([^"#]+)"', page) == ["static/console.css", *ASSETS[:1]]
    script = (await asgi.get("/console/static/console.js")).text
    assert 'new URL("../v1/" + path, document.baseURI)' in script
    assert "fetch(apiUrl(" in script
    assert not re.search(r"""fetch\(\s*["'`]/""", script)  # no absolute fetch
    # Data is shown as text, never parsed as markup.
    assert not re.search(r"\.(innerHTML|outerHTML|insertAdjacentHTML)\b|document\.write", script)


async def test_nothing_else_is_read_and_the_console_can_be_turned_off(
    agents: AgentClient, asgi: httpx.AsyncClient, keys: Keys
) -> None:
    for path in (
        "/console/static/_routes.py",
        "/console/static/..%2F_routes.py",
        "/console/static/index.htm",
        "/console/nope",
    ):
        assert (await asgi.get(path)).status_code == 404, path
    app = create_app(agents, SERVED, keys=keys.store, options=GatewayOptions(console=False))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        assert (await http.get("/console/")).status_code == 404


async def test_runs_are_listed_for_the_keys_tenant_with_their_pending_approvals(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=10), reply("sold")])
    async with (
        agent_worker(client, Trader, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        http = running.http
        started = await http.post(
            "/v1/agents/Trader/runs", json={"prompt": "Sell ACME"}, headers=keys.headers("operator")
        )
        workflow_id = started.json()["workflow_id"]
        await pending_approvals(http, keys, workflow_id)
        mine = await http.get("/v1/runs", headers=keys.headers("viewer"))
        theirs = await http.get("/v1/runs", headers=bearer(keys.other))
        limited = await http.get("/v1/runs?limit=1", headers=keys.headers("viewer"))
        nothing = await http.get("/v1/runs?limit=0", headers=keys.headers("viewer"))

    assert mine.status_code == 200, mine.text
    [run] = [r for r in mine.json()["runs"] if r["workflow_id"] == workflow_id]
    assert (run["agent"], run["status"], run["pending_approvals"]) == ("Trader", "running", 1)
    assert run["agent_status"] == "awaiting_approval"
    assert run["started_at"] and run["closed_at"] is None
    assert theirs.status_code == 200 and workflow_id not in theirs.text
    assert len(limited.json()["runs"]) == 1
    assert nothing.status_code == 422
    assert OTHER not in mine.text


async def test_whoami_names_the_keys_tenant_role_and_what_it_may_do(
    asgi: httpx.AsyncClient, keys: Keys
) -> None:
    """The console's header and the actions it offers come from here."""
    permissions = {
        "viewer": ["read"],
        "operator": ["read", "operate"],
        "approver": ["read", "approve"],
        "admin": ["read", "operate", "approve", "admin"],
    }
    for role, allowed in permissions.items():
        answer = await asgi.get("/v1/whoami", headers=keys.headers(role))
        assert answer.json() == {
            "name": f"{TENANT}-{role}",
            "tenant": TENANT,
            "role": role,
            "permissions": allowed,
        }
    other = (await asgi.get("/v1/whoami", headers=bearer(keys.other))).json()
    assert (other["name"], other["tenant"], other["role"]) == (f"{OTHER}-admin", OTHER, "admin")
    assert (await asgi.get("/v1/whoami")).status_code == 401
    assert (await asgi.get("/v1/whoami", headers=bearer("smyth_not-a-key"))).status_code == 401
