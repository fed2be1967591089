"""A bound on request bodies: larger ones are refused with 413 before they are read whole.

A declared ``Content-Length`` over the limit is refused at once; a chunked body is
counted as it arrives and refused once it passes the limit.
"""

from __future__ import annotations

from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from smyth_temporal.gateway._problems import problem_of, problem_response

__all__ = ["BodyLimit"]


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
