"""``GET /v1/whoami``: who the caller's key says it is, for the console's header.

The console shows the tenant, role and key name signed in, and offers only the actions
the role permits; the routes themselves still refuse (403) whatever it does not.
"""

from __future__ import annotations

from typing import get_args

from fastapi import APIRouter

from smyth_temporal.gateway._auth import Reader
from smyth_temporal.gateway._models import Identity
from smyth_temporal.security import Permission

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["identity"])


@router.get("/whoami", summary="The caller's key")
async def whoami(caller: Reader) -> Identity:
    """The key's name, tenant and role, and what the role permits."""
    permissions = [p for p in get_args(Permission) if caller.may(p)]
    return Identity(
        name=caller.name, tenant=caller.tenant, role=caller.role, permissions=permissions
    )
