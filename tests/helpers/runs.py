"""A ``Run`` for unit tests of the agent's components: no workflow, no server.

``bare_run`` builds the context ``AgentWorkflow.__init__`` builds, with ``StubHooks``
standing in for the agent (its offered tools, its ``data``, a ``call_tool`` the test
points at a runner) and ``StubEvents`` for the event stream (which needs a workflow).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from smyth_temporal.agent import WorkflowLogger
from smyth_temporal.agent.config import AgentConfig
from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.agent.interrupts import Interrupts
from smyth_temporal.agent.run import Run
from smyth_temporal.tools import Tool
from smyth_temporal.types import AgentInput, Message, ToolCall

__all__ = ["StubEvents", "StubHooks", "bare_run"]


class StubHooks:
    """The agent as components see it: offered tools (asks counted), ``data``, ``call_tool``."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.offered = list(tools)
        self.asked = 0
        """How many times the ``tools`` hook was asked."""
        self.data: dict[str, Any] = {}
        self.call: Callable[[ToolCall], Awaitable[Message]] | None = None

    @property
    def tools(self) -> list[Tool]:
        self.asked += 1
        return list(self.offered)

    async def call_tool(self, call: ToolCall) -> Message:
        assert self.call is not None, "point hooks.call at the runner's call first"
        return await self.call(call)


class StubEvents:
    """The event stream's surface the components use, recording what they publish."""

    def __init__(self) -> None:
        self.published: list[Any] = []

    def publish(self, event: Any) -> None:
        self.published.append(event)

    def release_subscribers(self) -> None:
        pass


def bare_run(
    config: AgentConfig,
    *,
    tools: Sequence[Tool] | None = None,
    conversation: Conversation | None = None,
    input: AgentInput | None = None,
    log: WorkflowLogger | None = None,
) -> Run:
    """A run of an agent with ``config``, offering ``tools`` (default ``config.tools``)."""
    conversation = conversation if conversation is not None else Conversation()
    log = log or WorkflowLogger("tests.runs")
    return Run(
        config=config,
        hooks=StubHooks(config.tools if tools is None else tools),
        conversation=conversation,
        events=StubEvents(),  # type: ignore[arg-type]
        log=log,
        interrupts=Interrupts(conversation, log),
        started=input,
    )
