"""Secrets masked: in text, in tool results (however quoted or nested), in log fields, in causes.

Unit tests of ``smyth_temporal._redaction``, which the worker's tool results and every
log line pass through (``configure_logging`` ends with its ``redact_event``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import NamedTuple

import pytest
import structlog
from pydantic import BaseModel

from smyth_temporal import ConfigurationError, secret
from smyth_temporal._redaction import (
    MAX_DEPTH,
    masked_cause,
    redact,
    redact_event,
    register_secret,
    spellings,
)
from smyth_temporal.activities.tools import render_output
from smyth_temporal.models import OpenAIProvider
from smyth_temporal.security import EnvSecrets, Secrets


def test_resolved_values_are_masked_in_text_and_logs() -> None:
    register_secret("UNIT_KEY", "unit-secret-value")
    assert redact("x unit-secret-value y") == "x [secret:UNIT_KEY] y"
    event = redact_event(None, "info", {"event": "e", "nested": {"k": ["unit-secret-value"]}})
    assert event == {"event": "e", "nested": {"k": ["[secret:UNIT_KEY]"]}}


def test_a_truncated_tool_result_keeps_no_part_of_a_secret() -> None:
    register_secret("CUT_KEY", "cut-secret-value")
    outcome = render_output("x" * 10 + "cut-secret-value", max_chars=15)
    assert outcome.truncated and outcome.content.startswith("xxxxxxxxxx[secr")
    assert "cut-" not in outcome.content


AWKWARD = 'hunter2"pa\\ss\tz\u00e9\u2028'
"""A secret that JSON and ``repr`` both spell differently from itself."""


@dataclasses.dataclass
class _Login:
    user: str
    password: str


class _Credentials(BaseModel):
    login: _Login
    tokens: list[str]


class _Pair(NamedTuple):
    key: str
    count: int


def _leaks(text: str, value: str) -> bool:
    return any(spelling in text for spelling in spellings(value))


def test_a_secret_with_quotes_or_backslashes_is_masked_in_a_structured_result() -> None:
    register_secret("AWKWARD_KEY", AWKWARD)
    results: list[object] = [
        {"password": AWKWARD},
        {"nested": [{"deeper": (AWKWARD, 1)}], AWKWARD: "as a key"},
        _Credentials(login=_Login(user="u", password=AWKWARD), tokens=[AWKWARD]),
        {"set": {AWKWARD}},
    ]
    for result in results:
        content = render_output(result, max_chars=10_000).content
        assert not _leaks(content, AWKWARD), content
        assert "[secret:AWKWARD_KEY]" in content
        json.loads(content)  # still JSON the model can read


def test_a_result_nested_deeper_than_the_walk_is_masked_too() -> None:
    register_secret("DEEP_KEY", 'deep"secret\\value')
    result: object = 'deep"secret\\value'
    for _ in range(MAX_DEPTH):  # two levels each: twice as deep as the walk goes
        result = {"k": [result]}
    content = render_output(result, max_chars=1_000_000).content
    assert not _leaks(content, 'deep"secret\\value')
    assert "[secret:DEEP_KEY]" in content


def test_a_secret_quoted_by_repr_is_masked_in_either_quoting() -> None:
    # repr quotes a string holding both quote marks with ', escaping the secret's '.
    register_secret("QUOTED_KEY", "it's-a-key")
    error = ValueError('said "' + "it's-a-key" + '"')
    line = redact(f"tool.failed error={error!r}")
    assert line == "tool.failed error=ValueError('said \"[secret:QUOTED_KEY]\"')"


def test_a_named_tuple_in_a_log_field_is_masked_without_breaking_the_line() -> None:
    register_secret("TUPLE_KEY", "tuple-secret-value")
    pair = _Pair("tuple-secret-value", 1)
    event = redact_event(None, "info", {"event": "e", "pair": pair, "plain": ("a", 1)})
    assert event["pair"] == ["[secret:TUPLE_KEY]", 1] and event["plain"] == ("a", 1)


def test_a_pydantic_object_in_a_log_field_is_masked() -> None:
    register_secret("LOG_KEY", 'log"secret\\value')
    credentials = _Credentials(login=_Login(user="u", password='log"secret\\value'), tokens=[])
    for renderer in (structlog.processors.JSONRenderer(), structlog.dev.ConsoleRenderer()):
        event = redact_event(
            None, "info", {"event": "e", "creds": credentials, "login": credentials.login}
        )
        line = renderer(None, "info", event)
        assert isinstance(line, str)
        assert not _leaks(line, 'log"secret\\value'), line
        assert "[secret:LOG_KEY]" in line
    plain = _Credentials(login=_Login(user="u", password="nothing"), tokens=[])
    assert redact_event(None, "info", {"event": "e", "creds": plain})["creds"] is plain


def test_only_a_real_looking_plain_model_key_is_masked() -> None:
    # Endpoints without keys take placeholders; masking them would cut words from text.
    OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="ollama")
    assert redact("served by ollama") == "served by ollama"
    OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="sk-plain-0123456789abcdef")
    assert redact("k=sk-plain-0123456789abcdef") == "k=[secret:OPENAI_API_KEY]"
    with pytest.raises(ConfigurationError, match="NOT_SET_ANYWHERE is not set"):
        OpenAIProvider(api_key=secret("NOT_SET_ANYWHERE"), secrets=Secrets([EnvSecrets({})]))


def test_a_cause_quoting_a_secret_is_dropped() -> None:
    register_secret("CAUSE_KEY", "cause-secret-value")
    plain = ValueError("nothing to hide")
    assert masked_cause(plain) is plain
    try:
        try:
            raise KeyError("cause-secret-value")
        except KeyError:
            raise RuntimeError("wrapped") from None
    except RuntimeError as suppressed:
        assert masked_cause(suppressed) is suppressed  # its context is not recorded
    outer = RuntimeError("wrapped")
    outer.__cause__ = KeyError("cause-secret-value")
    assert masked_cause(outer) is None
