"""FakeGoogleServer's own rules, over plain HTTP: what the cache-read figures rest on."""

from __future__ import annotations

from typing import Any

import httpx

from smyth_temporal.testing import FakeGoogleServer, google_turn


def generate(fake: FakeGoogleServer, model: str, body: dict[str, Any]) -> httpx.Response:
    url = f"{fake.base_url}/v1beta/models/{model}:generateContent"
    return httpx.post(url, json=body, headers={"x-goog-api-key": "k"})


def user(*texts: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": t} for t in texts]}]}


def test_implicit_caching_reads_the_longest_earlier_prefix_per_model_from_the_minimum() -> None:
    long, other = "a" * 400, "b" * 400  # about 100 tokens each part
    with FakeGoogleServer(min_cache_tokens=150) as fake:
        fake.enqueue(*(google_turn("ok") for _ in range(5)))
        generate(fake, "m", user(long, other))
        read = generate(fake, "m", user(long, other, "more")).json()["usageMetadata"]
        under = generate(fake, "m", user(long, "c")).json()["usageMetadata"]
        elsewhere = generate(fake, "n", user(long, other)).json()["usageMetadata"]
        reports = fake.reports

    # The two shared parts (over the minimum) are read; one shared part (under it) is
    # not; another model has its own cache.
    assert read["cachedContentTokenCount"] == reports[0].prompt_tokens
    assert "cachedContentTokenCount" not in under
    assert "cachedContentTokenCount" not in elsewhere
    assert reports[1].input_tokens == read["promptTokenCount"] - reports[0].prompt_tokens


def test_a_named_cache_goes_before_the_contents_and_stands_alone() -> None:
    with FakeGoogleServer(min_cache_tokens=50) as fake:
        created = httpx.post(
            f"{fake.base_url}/v1beta/cachedContents",
            json={"model": "models/m", "ttl": "60s", **user("x" * 400)},
        ).json()
        fake.enqueue(google_turn("ok"))
        named = {"cachedContent": created["name"], **user("next")}
        answer = generate(fake, "m", named).json()["usageMetadata"]
        beside = generate(fake, "m", {**named, "systemInstruction": {"parts": [{"text": "s"}]}})
        small = httpx.post(
            f"{fake.base_url}/v1beta/cachedContents", json={"model": "models/m", **user("x")}
        )

    assert answer["cachedContentTokenCount"] == created["usageMetadata"]["totalTokenCount"]
    assert answer["promptTokenCount"] > answer["cachedContentTokenCount"]
    assert beside.status_code == 400 and "system_instruction" in beside.json()["error"]["message"]
    assert small.status_code == 400 and "too small" in small.json()["error"]["message"]
