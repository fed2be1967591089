"""The caller a client acts for: an API key's principal, and the checks it implies.

``Identity`` is the one access check of every interface: the gateway, the MCP server
and the CLI act through ``AgentClient.acting_for(principal)``, whose methods map the
caller to its tenant, check its role (``Principal.permit``) and refuse another
tenant's run exactly as a run that does not exist.
"""

from __future__ import annotations

from temporalio.api.workflow.v1 import WorkflowExecutionInfo
from temporalio.client import Client

from smyth_temporal.clients._describe import describe_run
from smyth_temporal.clients._tenancy import TenantResolver
from smyth_temporal.exceptions import AccessDeniedError, AgentNotFoundError
from smyth_temporal.security import KeyStore, Permission, Principal
from smyth_temporal.settings import API_KEY_ENV, AccessSettings

__all__ = ["API_KEY_ENV", "Identity", "principal_from_env"]

DEFAULT_TENANT = "default"


def principal_from_env(keys: KeyStore | None = None) -> Principal | None:
    """The principal of ``SMYTH_API_KEY``, or ``None`` when it is not set.

    Raises:
        AccessDeniedError: The key is unknown or revoked.

    Added in 0.4.0.
    """
    key = AccessSettings.load().api_key
    secret = key.get_secret_value().strip() if key is not None else ""
    if not secret:
        return None
    found = (keys or KeyStore()).authenticate(secret)
    if found is None:
        raise AccessDeniedError(f"{API_KEY_ENV} is not a valid API key (unknown or revoked)")
    return Principal.of(found)


class Identity:
    """What a client may do: everything (no principal, trusted local use) or what a key allows.

    With a principal, the tenant always comes from it: a tenant argument naming another
    tenant is refused, runs of other tenants look like runs that do not exist, the role
    is checked before anything is sent, and decisions are recorded as the key's name.

    Args:
        client: The Temporal client (to read the tenant of runs).
        principal: Who the caller is; ``None``: no checks.
        tenancy: The tenant cache to share (``acting_for`` passes its own); default: a
            new one.

    Changed in 0.9.0: ``tenancy``, ``acting_for``; ``owns`` returns the chain it checked.
    """

    def __init__(
        self, client: Client, principal: Principal | None, tenancy: TenantResolver | None = None
    ) -> None:
        self.principal = principal
        self.tenancy = tenancy if tenancy is not None else TenantResolver(client)

    def acting_for(self, principal: Principal | None) -> Identity:
        """The same checks for ``principal``, sharing this identity's tenant cache."""
        return Identity(self.tenancy.client, principal, self.tenancy)

    def may(self, permission: Permission) -> bool:
        """Whether the caller may do what ``permission`` names (always, without a principal)."""
        return self.principal is None or self.principal.may(permission)

    def permit(self, permission: Permission) -> None:
        """Refuse unless the principal's role grants ``permission``.

        Raises:
            AccessDeniedError: It does not.
        """
        if self.principal is not None:
            self.principal.permit(permission)

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

    async def owns(
        self, workflow_id: str, permission: Permission = "read", *, pinned: bool = False
    ) -> str | None:
        """Refuse a role without ``permission``, or a run of another tenant (as not found).

        The role is checked first, so a refusal of the role tells nothing about the run.

        Args:
            workflow_id: The run.
            permission: What the caller is about to do.
            pinned: The caller sends what follows pinned to the chain returned (an update
                with ``first_execution_run_id``), so the server refuses it if the id names
                another chain by then: the chain remembered from an earlier check is
                enough, and no describe is made.

        Returns:
            The chain (first run id) the check holds for; ``None`` without a principal.

        Raises:
            AccessDeniedError: The role does not permit it.
            AgentNotFoundError: The run is not the principal's tenant's (or does not exist).
        """
        self.permit(permission)
        if self.principal is None:
            return None
        if pinned:
            known = self.tenancy.remembered(workflow_id)
            # Only a hint that grants is trusted: one that refuses may be stale.
            if known is not None and known.tenant == self.principal.tenant:
                return known.chain
        owner = await self.tenancy.current(workflow_id)
        if owner is None or owner.tenant != self.principal.tenant:
            raise AgentNotFoundError(f"no agent run with workflow id {workflow_id!r}")
        return owner.chain

    async def describe(self, workflow_id: str) -> WorkflowExecutionInfo | None:
        """The run ``workflow_id`` names now, as the server describes it, if the caller sees it.

        ``None``: no such run, or (with a principal) another tenant's. One describe.

        Raises:
            temporalio.service.RPCError: The server failed.
        """
        if self.principal is None:
            return await describe_run(self.tenancy.client, workflow_id)
        owner = await self.tenancy.current(workflow_id)
        if owner is None or owner.tenant != self.principal.tenant:
            return None
        return owner.info

    async def sees(self, workflow_id: str, run_id: str, chain: str) -> bool:
        """Whether a run found in a listing (of ``chain``) is the principal's tenant's.

        ``True`` without a principal.
        """
        if self.principal is None:
            return True
        return await self.tenancy.chain_tenant(workflow_id, run_id, chain) == self.principal.tenant

    def forget(self, workflow_id: str) -> None:
        """Drop what was remembered of ``workflow_id``'s chain (the server refused the pin)."""
        self.tenancy.forget(workflow_id)
