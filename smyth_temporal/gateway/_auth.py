"""Authentication and roles as FastAPI dependencies.

Every route but ``/healthz`` depends on ``require(permission)``: the caller's key
(``Authorization: Bearer <key>``, which OpenAI clients send too) gives its principal.
No key or a bad one: 401; a role without the permission: 403 (``Principal.permit``, in
the words of every interface); too many failures from one address or with one key's
first characters: 429 instead of 401. A valid key is never throttled (see
``authenticate``). Failures are logged (never the key).

The route then acts through ``gateway.acting_for(caller)``: the client's one access
check (tenant, role, ownership of runs), never one of the gateway's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import structlog
from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from smyth_temporal.gateway._gateway import Gateway, gateway_of
from smyth_temporal.security import DEV_PRINCIPAL, KeyRefused, Permission, Principal, authenticate

__all__ = ["Admin", "Approver", "Operator", "Reader", "require"]

log = structlog.get_logger("smyth_temporal.gateway")

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key from `smyth keys create`, as `Authorization: Bearer <key>`.",
)


async def _caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    gateway: Gateway = gateway_of(request)
    address = request.client.host if request.client else "unknown"
    presented = credentials.credentials if credentials is not None else None
    if presented is None and gateway.insecure_dev:
        return DEV_PRINCIPAL
    try:
        return authenticate(gateway.keys, gateway.limiter, address, presented)
    except KeyRefused as refused:
        event = "gateway.auth_throttled" if refused.throttled else "gateway.auth_failed"
        fields = {} if refused.throttled else {"reason": refused.reason}
        log.warning(event, client=address, path=request.url.path, **fields)
        raise HTTPException(refused.status, refused.reason, headers=refused.headers) from None


def require(permission: Permission) -> Callable[..., Awaitable[Principal]]:
    """A dependency that gives the caller if its role grants ``permission``.

    Refused before the request's body is read or anything is asked of Temporal: 403
    (``AccessDeniedError``) in the client's words.
    """

    async def allowed(caller: Annotated[Principal, Depends(_caller)]) -> Principal:
        caller.permit(permission)
        return caller

    return allowed


Reader = Annotated[Principal, Depends(require("read"))]
"""A caller that may read."""
Operator = Annotated[Principal, Depends(require("operate"))]
"""A caller that may start runs, send messages and interrupt."""
Approver = Annotated[Principal, Depends(require("approve"))]
"""A caller that may decide approvals."""
Admin = Annotated[Principal, Depends(require("admin"))]
"""A caller that may do anything."""
