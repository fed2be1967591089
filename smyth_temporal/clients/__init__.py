"""Clients: start, watch and steer agents; their memory; their schedules.

``AgentClient`` is the entry point (``AgentClient.connect("localhost:7233")``); its
``memory`` and ``schedules`` properties give a ``MemoryClient`` and a
``ScheduleClient`` on the same connection and task queue. One concern per module:

- ``_base``: connecting, agent names, RPC errors, the workers of a queue, pickups;
- ``_runs``: one run by workflow id, across continue-as-new; ``_approvals`` and
  ``_sessions``: ``AgentClient``'s approval and session methods;
- ``agents``: ``AgentClient``; ``memory``: ``MemoryClient``; ``schedules``:
  ``ScheduleClient``.

What the interfaces and the worker share with the clients is named here too, never
imported from the private modules: the task queue's ``pollers``, ``PICKUP_TIMEOUT``;
``deployment_version`` / ``deployment_config`` (Worker Deployment Versions) and
``verify_deploy`` (``VerifyReport``); ``LimitsClient`` (``AgentClient.limits``, its
``ModelLimits`` and ``DEFAULT``); ``Paused``; ``referenced_digests`` and
``namespaces_to_scan`` (what the payload store's collector keeps);
``execution_page`` and ``is_paused_execution`` (visibility listings);
``TenantResolver``; ``API_KEY_ENV``.

Added in 0.3.0 (the clients were ``smyth_temporal.client`` and private modules).
"""

from smyth_temporal.clients._approvals import ApprovalPage
from smyth_temporal.clients._base import (
    PICKUP_TIMEOUT,
    AgentRef,
    agent_name,
    connect_client,
    pollers,
)
from smyth_temporal.clients._deployment import deployment_config, deployment_version
from smyth_temporal.clients._identity import API_KEY_ENV
from smyth_temporal.clients._limits import DEFAULT, LimitsClient, ModelLimits
from smyth_temporal.clients._pause import Paused
from smyth_temporal.clients._references import namespaces_to_scan, referenced_digests
from smyth_temporal.clients._rewind import RewindResult
from smyth_temporal.clients._sessions import ReplyChunk, ReplyStream
from smyth_temporal.clients._tenancy import TenantResolver
from smyth_temporal.clients._verify import VerifyReport, verify_deploy
from smyth_temporal.clients._visibility import execution_page, is_paused_execution
from smyth_temporal.clients.agents import AgentClient, PendingApproval
from smyth_temporal.clients.memory import MemoryClient
from smyth_temporal.clients.schedules import (
    ScheduleClient,
    ScheduledRun,
    ScheduleSummary,
)

__all__ = [
    "API_KEY_ENV",
    "DEFAULT",
    "PICKUP_TIMEOUT",
    "AgentClient",
    "AgentRef",
    "ApprovalPage",
    "LimitsClient",
    "MemoryClient",
    "ModelLimits",
    "Paused",
    "PendingApproval",
    "ReplyChunk",
    "ReplyStream",
    "RewindResult",
    "ScheduleClient",
    "ScheduleSummary",
    "ScheduledRun",
    "TenantResolver",
    "VerifyReport",
    "agent_name",
    "connect_client",
    "deployment_config",
    "deployment_version",
    "execution_page",
    "is_paused_execution",
    "namespaces_to_scan",
    "pollers",
    "referenced_digests",
    "verify_deploy",
]
