"""Sub-agents: running another agent as a child workflow, and the built-in delegate tool.

Workflow code. A child may use only the tools its parent has and allows, runs in the
parent's tenant within the parent's bounds, and its usage is added to the parent's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

from smyth_temporal._names import workflow_name
from smyth_temporal.agent.bounds import RunBounds
from smyth_temporal.agent.config import config_of
from smyth_temporal.agent.run import Run
from smyth_temporal.exceptions import ToolCallError, UserError
from smyth_temporal.tools import Tool, ToolExecutor, tool
from smyth_temporal.types.agent import AgentInput, AgentLimits, AgentResult
from smyth_temporal.types.messages import ToolCall

__all__ = ["DELEGATE_EXECUTOR", "DELEGATE_TOOL", "Delegation", "delegate_tool_for"]

DELEGATE_TOOL = "delegate"
"""The built-in tool's name."""

DELEGATE_EXECUTOR = "delegate"
"""The executor of the built-in tool: ``Delegation.run_tool``."""


async def delegate(agent: str, task: str) -> str:
    """Hand a self-contained task to a sub-agent and get its answer.

    Args:
        agent: The sub-agent's name.
        task: Everything the sub-agent needs to know to do the task.
    """
    raise UserError("the built-in delegate tool is run by the agent itself")


_DELEGATE: Tool = dataclasses.replace(tool(delegate), executor=DELEGATE_EXECUTOR)


@functools.cache
def delegate_tool_for(subagents: tuple[Any, ...]) -> Tool:
    """The delegate tool, its description naming the sub-agents an agent may use.

    Cached, so an agent offers the same tool object (and its cached schema) each turn.
    """
    names = ", ".join(workflow_name(a) for a in subagents)
    return dataclasses.replace(
        _DELEGATE, description=f"{_DELEGATE.description} Sub-agents: {names}."
    )


class Delegation:
    """Starts sub-agents as child workflows and counts them.

    Args:
        run: The parent's run (conversation: usage, step; input: tenant, session,
            limits; tools: what a child may be given; config: the sub-agents the
            built-in tool may start; hooks: the tool goes through ``delegate``).
        bounds: The parent's bounds (what it has left to spend goes to the child);
            ``None``: no money bound.

    Added in 0.3.0. Changed in 0.9.0: takes the ``Run`` and the ``RunBounds``.
    """

    def __init__(self, run: Run, bounds: RunBounds | None = None) -> None:
        self.count = 0
        """Sub-agents started so far (counted across continue-as-new; names child ids)."""
        self._run = run
        self._conversation = run.conversation
        self._log = run.log
        self._subagents = {workflow_name(a): a for a in run.config.subagents}
        self._bounds = bounds

    def tools(self) -> tuple[Tool, ...]:
        """The built-in ``delegate`` tool, if the agent has sub-agents."""
        if not self._subagents:
            return ()
        return (delegate_tool_for(tuple(self._subagents.values())),)

    async def run(
        self,
        agent: Any,
        task: AgentInput | str,
        *,
        tools: Sequence[str | Tool] | None = None,
        max_steps: int | None = None,
        max_tokens: int | None = None,
    ) -> AgentResult:
        """Run a sub-agent to completion; see ``AgentWorkflow.delegate``.

        The child may have what the parent is offered this turn (``Run.tools``); its
        limits name tools by ``qualified_name``, so an MCP tool is the same tool in
        both whatever name each offers it under. A child class with an
        ``output_type`` gives its ``data`` back as that type.
        """
        parent, own_tools = self._run.input, self._run.tools()
        own = {t.qualified_name for t in own_tools}
        wanted = own if tools is None else {_qualified(t, own_tools) for t in tools}
        if max_tokens is None and parent.limits and parent.limits.max_tokens:
            used = self._conversation.usage.total_tokens
            max_tokens = max(parent.limits.max_tokens - used, 1)
        child_input = task if isinstance(task, AgentInput) else AgentInput(prompt=task)
        limits = AgentLimits(
            tools=sorted(own & wanted),
            max_steps=max_steps,
            max_tokens=max_tokens,
            # What the parent has left: the child's spending is added to the parent's.
            max_cost=self._bounds.remaining_cost if self._bounds is not None else None,
        )
        child_input = child_input.model_copy(
            update={
                "tenant": parent.tenant,
                "session_id": child_input.session_id or parent.session_id,
                "limits": limits,
            }
        )
        name = agent if isinstance(agent, str) else workflow_name(agent)
        self.count += 1
        child_id = f"{workflow.info().workflow_id}/{name}-{self.count}"
        self._log.info("agent.delegating", child=child_id, tools=limits.tools)
        result: AgentResult = await workflow.execute_child_workflow(
            name,
            child_input,
            id=child_id,
            result_type=AgentResult,
            # Closing the parent any way (even terminating it) cancels the child.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"sub-agent {name} (step {self._conversation.step})",
        )
        self._conversation.count(result.usage)
        self._log.info("agent.delegated", child=child_id, status=result.status, steps=result.steps)
        output = None if isinstance(agent, str) else config_of(agent).output
        if output is not None and result.data is not None:
            result.data = output.validate(result.data)  # the child's typed answer, typed again
        return result

    def executor(self) -> ToolExecutor:
        """The executor of the built-in tool, through the agent's ``delegate``."""
        delegate = self._run.hooks.delegate

        async def run_tool(spec: Tool, call: ToolCall, arguments: dict[str, Any]) -> str:
            agent = self._subagents.get(arguments["agent"])
            if agent is None:
                known = ", ".join(sorted(self._subagents)) or "none"
                raise ToolCallError(f"unknown sub-agent {arguments['agent']!r}; known: {known}")
            try:
                result: AgentResult = await delegate(agent, arguments["task"])
            except ChildWorkflowError as exc:
                raise ToolCallError(
                    f"sub-agent {arguments['agent']} failed: {exc.cause or exc}"
                ) from exc
            return f"[{result.status}, {result.steps} steps] {result.output}"

        return run_tool


def _qualified(wanted: str | Tool, own: Sequence[Tool]) -> str:
    """The qualified name of a tool a parent names (by name, qualified name or object)."""
    if isinstance(wanted, Tool):
        return wanted.qualified_name
    found = next((t for t in own if wanted in (t.name, t.qualified_name)), None)
    return found.qualified_name if found is not None else wanted
