"""Agents that use MCP servers, shared by the MCP tests and their worker processes.

Workflow code only: the servers they name live in ``tests.helpers.mcp_servers`` (and on PyPI).
"""

from __future__ import annotations

from temporalio import workflow

from smyth_temporal import AgentConfig, AgentInput, AgentResult, AgentWorkflow, tool


@tool
async def summarize(text: str) -> str:
    """Summarize a text in a few words.

    Args:
        text: What to summarize.
    """
    return text[:40]


@workflow.defn
class Clock(AgentWorkflow):
    """Tells the time through ``mcp-server-time`` (read-only tools)."""

    config = AgentConfig(model="test-model", mcp_servers=["time"], max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class RepoKeeper(AgentWorkflow):
    """Keeps a git repository through ``mcp-server-git``, next to an ordinary tool."""

    config = AgentConfig(
        model="test-model",
        mcp_servers=["git"],
        tools=[summarize],
        mcp_deny={"git": ["git_create_branch", "git_checkout"]},
        max_steps=8,
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Prober(AgentWorkflow):
    """Uses the test's streamable-HTTP server (``tests.helpers.mcp_servers.ProbeServer``)."""

    config = AgentConfig(model="test-model", mcp_servers=["probe"], max_steps=8)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Scribe(AgentWorkflow):
    """Writes through the stdio ledger server (``tests.helpers.mcp_ledger_server``)."""

    config = AgentConfig(model="test-model", mcp_servers=["ledger"], max_steps=6)

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class Typo(AgentWorkflow):
    """Names a server no worker has."""

    config = AgentConfig(model="test-model", mcp_servers=["tiem"])

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)


@workflow.defn
class RelayProber(AgentWorkflow):
    """``Prober`` continuing as new after every step: each run lists the tools again."""

    config = AgentConfig(
        model="test-model", mcp_servers=["probe"], max_steps=8, continue_as_new_after_steps=1
    )

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        return await self.run_agent(input)
