"""Server-Sent Events, written by hand: a few lines of framing over ``StreamingResponse``.

``Lookahead`` reads a stream one item ahead. That does two things a plain generator
cannot: a failure that comes at once (a refused message, say) still becomes an HTTP
error, because the route waits briefly for the first item before answering; and an
idle stream is noticed, so a comment line (``: ping``) keeps proxies from closing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from smyth_temporal.gateway._problems import problem_of

__all__ = [
    "EVENT_STREAM",
    "SSE_RESPONSES",
    "Lookahead",
    "encode",
    "error_event",
    "event_stream",
    "wants_stream",
]

T = TypeVar("T")

EVENT_STREAM = "text/event-stream"

PING = b": ping\n\n"

_LINE_END = re.compile(r"\r\n|\r|\n")
"""Where the SSE spec ends a line. Not ``str.splitlines``, which also splits at U+2028,
U+0085 and others that JSON leaves unescaped inside a string: a client would read such
a string broken with a newline, and its JSON invalid."""

SSE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events (`text/event-stream`)",
        "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
    }
}
"""OpenAPI for a route that streams: the events are described in its docstring."""

_HEADERS = {
    "Cache-Control": "no-cache",
    # nginx buffers responses unless told not to; events must go out as they come.
    "X-Accel-Buffering": "no",
}


def encode(data: str, *, event: str | None = None, id: int | str | None = None) -> bytes:
    """One event in the ``text/event-stream`` format (``data`` may span lines)."""
    lines = [f"event: {event}"] if event else []
    lines += [f"data: {line}" for line in _LINE_END.split(data)]
    if id is not None:
        lines.append(f"id: {id}")
    return ("\n".join(lines) + "\n\n").encode()


def error_event(exc: Exception) -> bytes:
    """An error after a stream began, as an ``error`` event of problem details."""
    return encode(problem_of(exc).model_dump_json(exclude_none=True), event="error")


def wants_stream(accept: str | None, stream: bool | None) -> bool:
    """Whether a caller asked for events: ``?stream=true``, or ``Accept: text/event-stream``."""
    if stream is not None:
        return stream
    return accept is not None and EVENT_STREAM in accept


class Lookahead(Generic[T]):
    """An async iterator read one item ahead, in a task of its own.

    Args:
        source: The stream.
        on_close: Called once when the stream is closed (its slot given back).
    """

    def __init__(
        self, source: AsyncIterator[T], *, on_close: Callable[[], None] | None = None
    ) -> None:
        self._source = source
        self._next: asyncio.Future[T] | None = None
        self._closed = False
        self._on_close = on_close

    def _pending(self) -> asyncio.Future[T]:
        if self._next is None:
            self._next = asyncio.ensure_future(anext(self._source))
        return self._next

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the first item, raising the stream's error.

        Raises:
            Exception: Whatever the stream raised first, if it did within ``timeout``.
        """
        first = self._pending()
        await asyncio.wait({first}, timeout=timeout)
        if first.done() and not first.cancelled():
            error = first.exception()
            if error is not None and not isinstance(error, StopAsyncIteration):
                await self.aclose()
                raise error

    async def items(self, idle: float) -> AsyncIterator[T | None]:
        """The stream's items; ``None`` after every ``idle`` seconds without one."""
        while True:
            pending = self._pending()
            done, _ = await asyncio.wait({pending}, timeout=idle)
            if not done:
                yield None
                continue
            self._next = None
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            yield item

    async def aclose(self) -> None:
        """Stop reading: cancel the read in flight and close the source (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._on_close is not None:
            self._on_close()
        pending = self._next
        if pending is not None and not pending.done():
            pending.cancel()
            await asyncio.wait({pending})  # the source runs its ``finally`` blocks
        if pending is not None and not pending.cancelled():
            pending.exception()  # retrieved, so asyncio does not report it as lost
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


def event_stream(
    source: Lookahead[T],
    render: Callable[[T], bytes],
    *,
    idle: float,
    on_error: Callable[[Exception], bytes],
    last: bytes | None = None,
) -> StreamingResponse:
    """A ``text/event-stream`` response of ``source``'s items, with pings while idle.

    Args:
        source: The items, read ahead.
        render: One item as an event.
        idle: Seconds without an item before a ping.
        on_error: The event that reports an error raised after the response began
            (its status is sent by then).
        last: An event to send after the last item (``data: [DONE]`` for OpenAI).
    """

    async def body() -> AsyncIterator[bytes]:
        try:
            async for item in source.items(idle):
                yield PING if item is None else render(item)
            if last is not None:
                yield last
        except Exception as exc:
            yield on_error(exc)
        finally:
            await source.aclose()

    # The background task closes the source even if the client left before the body
    # ever started (a generator that never ran has no ``finally`` to run).
    return StreamingResponse(
        body(),
        media_type=EVENT_STREAM,
        headers=_HEADERS,
        background=BackgroundTask(source.aclose),
    )
