"""Bounds on what one request or one key can hold: request bodies, open event streams.

A request body over the limit is refused with 413 before it is read whole: a declared
``Content-Length`` at once, a chunked body once what arrived passes the limit.

Open event streams are counted per API key (``StreamSlots``): past the cap, a new one is
refused with 429 before it opens, so no key, however many tabs or scripts it runs,
holds an unbounded share of the gateway's readers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from smyth_temporal.gateway._problems import problem_of, problem_response
from smyth_temporal.security import Principal

__all__ = ["BodyLimit", "StreamSlots"]


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413.

    Args:
        app: The application.
        max_bytes: The largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> HTTPException:
        return HTTPException(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"the request body is larger than {self.max_bytes} bytes",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            request = Request(scope)
            response = problem_response(request, problem_of(self._too_large()))
            await response(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # FastAPI lets an HTTPException from reading the body through to the
                    # app's handlers, which answer it as problem details.
                    raise self._too_large()
            return message

        await self.app(scope, counted, send)


class StreamSlots:
    """The event streams each API key has open in this gateway process, at most ``per_key``.

    Args:
        per_key: The most streams one key may have open at once.

    Added in 0.8.0.
    """

    def __init__(self, per_key: int) -> None:
        self.per_key = per_key
        self._open: Counter[tuple[str, str]] = Counter()

    def open(self, principal: Principal) -> int:
        """How many streams ``principal``'s key has open now."""
        return self._open[(principal.tenant, principal.name)]

    def take(self, principal: Principal) -> Callable[[], None]:
        """Count one more open stream for ``principal``'s key; returns its release.

        The release may be called any number of times; it counts once.

        Raises:
            HTTPException: 429, the key has ``per_key`` streams open already.
        """
        key = (principal.tenant, principal.name)
        if self._open[key] >= self.per_key:
            raise HTTPException(
                HTTPStatus.TOO_MANY_REQUESTS,
                f"this API key has {self.per_key} event streams open, the most it may: "
                "close one before opening another",
                headers={"Retry-After": "1"},
            )
        self._open[key] += 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self._open[key] -= 1
            if self._open[key] <= 0:
                del self._open[key]

        return release
