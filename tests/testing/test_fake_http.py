"""The fake servers' shared plumbing: starting and stopping."""

from __future__ import annotations

import threading

import openai

from smyth_temporal.testing import FakeOpenAIServer, chat_completion


class SlowPollingFake(FakeOpenAIServer):
    _poll_interval = 3600.0


async def test_stopping_a_fake_does_not_wait_for_its_serving_loop_to_poll() -> None:
    # The serving loop looks at its stop flag between polls; stop() used to wait for
    # the next one, ~40 ms of every test using a fake (here it would be an hour).
    fake = SlowPollingFake()
    fake.start()
    fake.enqueue(chat_completion("hi"))
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    stopping = threading.Thread(target=fake.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=30)
    assert not stopping.is_alive()
    # Waking the loop leaves no trace among the requests, and a second stop is harmless.
    assert [r.path for r in fake.requests] == ["/v1/chat/completions"]
    fake.stop()
    await client.close()
