"""The console's routes: the page, its script and its stylesheet, with strict headers.

No route needs a key, because none holds data. The Content-Security-Policy allows
only the console's own script and stylesheet and requests to its own origin, so data
an agent wrote (arguments, messages) can never run as script in the page.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import RedirectResponse, Response

__all__ = ["CONSOLE_PATH", "router"]

CONSOLE_PATH: Final = "/console"
"""Where the console is served (its page is ``/console/``)."""

router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)

_STATIC = files(__package__) / "static"

_TYPES: Final = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
"""Every file the console serves, and its media type: nothing else is read."""

_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _file(name: str) -> Response:
    if name not in _TYPES:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the console has no file {name!r}")
    content = (_STATIC / name).read_bytes()
    return Response(content, media_type=_TYPES[name], headers=_HEADERS)


@router.get("")
async def console_root() -> RedirectResponse:
    """To the page, by a relative URL, so a proxy's path prefix is kept."""
    return RedirectResponse("console/", status_code=status.HTTP_308_PERMANENT_REDIRECT)


@router.get("/")
async def console_page() -> Response:
    """The console's one page; what it shows comes from the API, with the user's key."""
    return _file("index.html")


@router.get("/static/{name}")
async def console_static(name: str) -> Response:
    """The console's script or stylesheet."""
    return _file(name)
