"""Who calls: the principal an API key stands for, and what its role permits.

Every interface (the gateway, ``AgentClient``, the CLI, the MCP server) derives the
caller's tenant and role from here, never from a request's body, and refuses a role
in the same words (``Principal.permit``). Runs are checked against the principal's
tenant by ``AgentClient.acting_for(principal)``, the one access check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from smyth_temporal.exceptions import AccessDeniedError
from smyth_temporal.security._keys import ApiKey, Role

__all__ = ["ACTIONS", "DEV_PRINCIPAL", "Permission", "Principal"]

Permission = Literal["read", "operate", "approve", "admin"]
"""What a route needs: ``read`` (look), ``operate`` (start runs, send messages,
interrupt), ``approve`` (decide approvals), ``admin`` (forget memories)."""

ACTIONS: dict[Permission, str] = {
    "read": "read runs, approvals, memories or schedules",
    "operate": "start runs, send messages or interrupt",
    "approve": "decide approvals",
    "admin": "forget memories",
}
"""Each permission in words, for the 403 that refuses it."""

_GRANTS: dict[Role, frozenset[Permission]] = {
    "viewer": frozenset({"read"}),
    # Operators and approvers read too: nobody can act on what they cannot see.
    "operator": frozenset({"read", "operate"}),
    "approver": frozenset({"read", "approve"}),
    "admin": frozenset({"read", "operate", "approve", "admin"}),
}


@dataclass(frozen=True)
class Principal:
    """The caller, as its API key says.

    Added in 0.3.0.
    """

    name: str
    """The key's name: recorded as who decided, interrupted or sent."""
    tenant: str
    """The only tenant the caller reaches."""
    role: Role
    """What it may do."""

    @classmethod
    def of(cls, key: ApiKey) -> Principal:
        """The principal an API key stands for.

        Added in 0.9.0.
        """
        return cls(name=key.name, tenant=key.tenant, role=key.role)

    def may(self, permission: Permission) -> bool:
        """Whether the role grants ``permission``."""
        return permission in _GRANTS[self.role]

    def permit(self, permission: Permission) -> None:
        """Refuse unless the role grants ``permission``, in the words every interface uses.

        Raises:
            AccessDeniedError: It does not (the gateway answers 403).

        Added in 0.9.0.
        """
        if not self.may(permission):
            raise AccessDeniedError(
                f"key {self.name!r} (role {self.role}) may not {ACTIONS[permission]}"
            )


DEV_PRINCIPAL = Principal(name="insecure-dev", tenant="default", role="admin")
"""Who a request without a key is under ``smyth serve --insecure-dev``."""
