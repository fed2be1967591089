"""AG-UI with the official client: ``@ag-ui/client``'s ``HttpAgent`` under node.

``tests/gateway/agui_client/run.mjs`` plays a front end against a gateway on loopback; its
``package-lock.json`` pins the client, installed with ``npm ci`` the first time (the npm
registry is reachable wherever the suite runs; without node the tests skip, saying so).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from smyth_temporal.testing import ScriptedModel, agent_worker, reply, tool_call
from tests.helpers.gateway_support import TENANT, Keys, Running, gateway, make_keys
from tests.helpers.live_agents import Operator

CLIENT = Path(__file__).parent / "agui_client"
NODE_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary, with the client's packages installed (``npm ci`` once)."""
    found, npm = shutil.which("node"), shutil.which("npm")
    if found is None or npm is None:
        pytest.skip("node and npm are needed to run @ag-ui/client (apt-get install nodejs npm)")
    if not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=CLIENT,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return found


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


async def front_end(node: str, running: Running, scenario: dict[str, Any]) -> dict[str, Any]:
    """What ``run.mjs`` saw, driving the gateway with ``scenario``."""
    process = await asyncio.create_subprocess_exec(
        node,
        str(CLIENT / "run.mjs"),
        cwd=CLIENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    payload = json.dumps({"url": running.url, "agent": "Operator", **scenario}).encode()
    async with asyncio.timeout(NODE_TIMEOUT):
        out, err = await process.communicate(payload)
    assert process.returncode == 0, err.decode()
    seen: dict[str, Any] = json.loads(out)
    return seen


async def test_the_official_client_streams_text_in_order_and_finishes(
    client: Client, task_queue: str, keys: Keys, node: str
) -> None:
    answers = ["ACME trades at 42 today.", "You asked how ACME is doing."]
    model = ScriptedModel([reply(a) for a in answers], piece_delay=0.01)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        seen = await front_end(
            node,
            running,
            {
                "threadId": f"node-{uuid.uuid4().hex[:8]}",
                "keys": {"run": keys.by_role["operator"], "resume": keys.by_role["approver"]},
                "prompts": ["How is ACME doing?", "What did I ask?"],
                "approve": True,
            },
        )

    first, second = seen["runs"]
    assert first["error"] is None, first["error"]
    events = first["events"]
    assert events[0] == "RUN_STARTED" and events[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
    text = [e for e in events if e.startswith("TEXT_MESSAGE")]
    assert text[0] == "TEXT_MESSAGE_START" and text[-1] == "TEXT_MESSAGE_END"
    assert set(text[1:-1]) == {"TEXT_MESSAGE_CONTENT"}
    assert (first["text"], first["outcome"]) == (answers[0], "success")
    assert (second["text"], second["outcome"]) == (answers[1], "success")
    # The client's own record of the thread: its messages and the agent's answers.
    assert [(m["role"], m["content"]) for m in seen["messages"]] == [
        ("user", "How is ACME doing?"),
        ("assistant", answers[0]),
        ("user", "What did I ask?"),
        ("assistant", answers[1]),
    ]
    # One durable session: the second model call saw the whole exchange.
    seen_by_model = [m.content for m in model.requests[1].messages if m.role == "user"]
    assert seen_by_model == ["How is ACME doing?", "What did I ask?"]


async def test_the_official_client_resumes_an_approval_interrupt_with_the_decision(
    client: Client, task_queue: str, keys: Keys, node: str
) -> None:
    model = ScriptedModel([tool_call("sell", symbol="ACME", quantity=5), reply("Sold 5 ACME.")])
    thread = f"node-{uuid.uuid4().hex[:8]}"
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        seen = await front_end(
            node,
            running,
            {
                "threadId": thread,
                "keys": {"run": keys.by_role["operator"], "resume": keys.by_role["approver"]},
                "prompts": ["Sell 5 ACME."],
                "approve": True,
            },
        )
        state = await running.http.get(
            f"/v1/runs/Operator-session-{TENANT}-{thread}", headers=keys.headers("viewer")
        )

    interrupted, resumed = seen["runs"]
    assert interrupted["error"] is None and resumed["error"] is None, seen["runs"]
    assert interrupted["outcome"] == "interrupt"
    [interrupt] = interrupted["interrupts"]
    assert interrupt["reason"] == "approval"
    assert interrupt["metadata"]["smyth"]["tool"] == "sell"
    assert [e for e in interrupted["events"] if e.startswith("TOOL_CALL")] == [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ]
    assert resumed["outcome"] == "success" and resumed["text"] == "Sold 5 ACME."
    assert "TOOL_CALL_RESULT" in resumed["events"]
    assert seen["pending"] == []  # the client cleared the interrupt
    assert len(model.requests) == 2  # the same turn went on; nothing was sent twice
    [approval] = state.json()["approvals"]
    assert approval["status"] == "approved"
    assert approval["decision"]["by"] == f"{TENANT}-approver"
