"""Clients: start, watch and steer agents; their memory; their schedules.

``AgentClient`` is the entry point (``AgentClient.connect("localhost:7233")``); its
``memory`` and ``schedules`` properties give a ``MemoryClient`` and a
``ScheduleClient`` on the same connection and task queue. One concern per module:

- ``_base``: connecting, agent names, RPC errors, the workers of a queue, pickups;
- ``_runs``: one run by workflow id, across continue-as-new; ``_approvals`` and
  ``_sessions``: ``AgentClient``'s approval and session methods;
- ``agents``: ``AgentClient``; ``memory``: ``MemoryClient``; ``schedules``:
  ``ScheduleClient``.

Added in 0.3.0 (the clients were ``smyth_temporal.client`` and private modules).
"""

from smyth_temporal.clients._approvals import ApprovalPage
from smyth_temporal.clients._base import AgentRef, agent_name, connect_client
from smyth_temporal.clients._sessions import ReplyChunk, ReplyStream
from smyth_temporal.clients.agents import AgentClient, PendingApproval
from smyth_temporal.clients.memory import MemoryClient
from smyth_temporal.clients.schedules import (
    ScheduleClient,
    ScheduledRun,
    ScheduleSummary,
)

__all__ = [
    "AgentClient",
    "AgentRef",
    "ApprovalPage",
    "MemoryClient",
    "PendingApproval",
    "ReplyChunk",
    "ReplyStream",
    "ScheduleClient",
    "ScheduleSummary",
    "ScheduledRun",
    "agent_name",
    "connect_client",
]
