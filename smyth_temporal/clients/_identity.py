"""The caller a client acts for: an API key's principal, and the checks it implies."""

from __future__ import annotations

import os

from temporalio.client import Client

from smyth_temporal.clients._tenancy import TenantResolver
from smyth_temporal.exceptions import AccessDeniedError
from smyth_temporal.security._identity import ACTIONS, Permission, Principal
from smyth_temporal.security._keys import KeyStore

__all__ = ["API_KEY_ENV", "Identity", "principal_from_env"]

API_KEY_ENV = "SMYTH_API_KEY"
"""An API key (``smyth keys create``) the CLI and ``AgentClient.connect`` act with.

Added in 0.4.0.
"""

DEFAULT_TENANT = "default"


def principal_from_env(keys: KeyStore | None = None) -> Principal | None:
    """The principal of ``SMYTH_API_KEY``, or ``None`` when it is not set.

    Raises:
        AccessDeniedError: The key is unknown or revoked.

    Added in 0.4.0.
    """
    secret = os.environ.get(API_KEY_ENV, "").strip()
    if not secret:
        return None
    found = (keys or KeyStore()).authenticate(secret)
    if found is None:
        raise AccessDeniedError(f"{API_KEY_ENV} is not a valid API key (unknown or revoked)")
    return Principal(name=found.name, tenant=found.tenant, role=found.role)


class Identity:
    """What a client may do: everything (no principal, trusted local use) or what a key allows.

    With a principal, the tenant always comes from it: a tenant argument naming another
    tenant is refused, runs of other tenants look like runs that do not exist, the role
    is checked before anything is sent, and decisions are recorded as the key's name.

    Args:
        client: The Temporal client (to read the tenant of runs).
        principal: Who the caller is; ``None``: no checks.
    """

    def __init__(self, client: Client, principal: Principal | None) -> None:
        self.principal = principal
        self._tenancy = TenantResolver(client) if principal is not None else None

    def permit(self, permission: Permission) -> None:
        """Refuse unless the principal's role grants ``permission``.

        Raises:
            AccessDeniedError: It does not.
        """
        if self.principal is not None and not self.principal.may(permission):
            raise AccessDeniedError(
                f"key {self.principal.name!r} (role {self.principal.role}) may not "
                f"{ACTIONS[permission]}"
            )

    def tenant(self, given: str | None) -> str:
        """The tenant to act for: the principal's, or ``given`` without one.

        ``default`` (every tenant parameter's default) means "mine" under a principal.

        Raises:
            AccessDeniedError: ``given`` names another tenant than the key's.
        """
        if self.principal is None:
            return given or DEFAULT_TENANT
        if given not in (None, DEFAULT_TENANT, self.principal.tenant):
            raise AccessDeniedError(
                f"key {self.principal.name!r} acts for tenant {self.principal.tenant!r} only, "
                f"not {given!r}"
            )
        return self.principal.tenant

    def by(self, given: str | None) -> str | None:
        """Who decided, interrupted or sent: the key's name under a principal."""
        return self.principal.name if self.principal is not None else given

    async def owns(self, workflow_id: str, permission: Permission = "read") -> None:
        """Refuse a run of another tenant (as not found) or a role without ``permission``.

        Raises:
            AccessDeniedError: The role does not permit it.
            AgentNotFoundError: The run is not the principal's tenant's (or does not exist).
        """
        self.permit(permission)
        if self._tenancy is not None and self.principal is not None:
            await self._tenancy.check(self.principal.tenant, workflow_id)
