"""SSE framing: an event's data breaks into lines only where the SSE spec ends a line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from temporalio.client import Client

from smyth_temporal.gateway._sse import encode
from smyth_temporal.testing import ScriptedModel, agent_worker, reply
from tests.helpers.gateway_support import Keys, gateway, make_keys
from tests.helpers.live_agents import Operator

# Characters Python's ``str.splitlines`` ends a line at but the SSE spec does not.
NOT_SSE_LINE_ENDS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"

TRICKY = "Line\u2028separator, paragraph\u2029end, next\u0085line, form\x0cfeed: all one line."


def parse_sse(stream: bytes) -> list[tuple[str | None, str]]:
    """Events as an SSE client reads them (WHATWG spec: lines end at CRLF, LF or CR)."""
    events: list[tuple[str | None, str]] = []
    kind: str | None = None
    data: list[str] = []
    for line in re.split(r"\r\n|\r|\n", stream.decode()):
        if not line:
            if data:
                events.append((kind, "\n".join(data)))
            kind, data = None, []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            kind = line[6:].removeprefix(" ")
    return events


def test_sse_data_keeps_unicode_line_separators_inside_one_line() -> None:
    payload = json.dumps({"text": TRICKY}, ensure_ascii=False)

    framed = encode(payload, event="message")

    assert parse_sse(framed) == [("message", payload)]
    assert json.loads(parse_sse(framed)[0][1]) == {"text": TRICKY}


@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("\r\n" + NOT_SSE_LINE_ENDS)))
def test_any_sse_data_reads_back_as_written_up_to_newline_spelling(data: str) -> None:
    # The spec gives a client no way to tell CR or CRLF from LF inside data: all read as LF.
    expected = re.sub(r"\r\n|\r", "\n", data)

    assert parse_sse(encode(data, event="e")) == [("e", expected)]


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return make_keys(tmp_path / "keys.json")


async def test_openai_client_streams_text_with_unicode_line_separators(
    client: Client, task_queue: str, keys: Keys
) -> None:
    model = ScriptedModel([reply(TRICKY)], piece_delay=0.01)
    async with (
        agent_worker(client, Operator, model=model, task_queue=task_queue),
        gateway(client, task_queue, keys) as running,
    ):
        chat = openai.AsyncOpenAI(
            base_url=f"{running.url}/openai/v1", api_key=keys.by_role["operator"], max_retries=0
        )
        stream = await chat.chat.completions.create(
            model="Operator",
            user="lines",
            messages=[{"role": "user", "content": "Say something odd."}],
            stream=True,
        )
        chunks = [chunk async for chunk in stream]

    assert "".join(c.choices[0].delta.content or "" for c in chunks) == TRICKY
