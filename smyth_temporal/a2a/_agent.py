"""``a2a_agent``: a remote A2A agent as a tool of an agent."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

from smyth_temporal.exceptions import ToolDefinitionError
from smyth_temporal.tools import Tool, tool, tool_context
from smyth_temporal.types.tools import ToolEffect

__all__ = ["DEFAULT_A2A_TIMEOUT", "a2a_agent", "a2a_message_id"]

DEFAULT_A2A_TIMEOUT = timedelta(minutes=10)
"""How long one call may wait for the remote task's answer (one attempt)."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def a2a_message_id(workflow_id: str, idempotency_key: str) -> str:
    """The ``messageId`` of a call: the same for every attempt of the same call.

    Hashed so neither the workflow id nor the key is disclosed to the remote agent.
    """
    digest = hashlib.sha256(f"{workflow_id}\0{idempotency_key}".encode()).hexdigest()
    return f"smyth-{digest[:40]}"


def a2a_agent(
    url: str,
    *,
    name: str,
    description: str,
    key_secret: str | None = None,
    timeout: timedelta = DEFAULT_A2A_TIMEOUT,
    effect: ToolEffect = "side_effect",
) -> Tool:
    """A tool that sends the model's message to the remote A2A agent at ``url``.

    Args:
        url: The agent's base URL (its card is at ``<url>/.well-known/agent-card.json``;
            on a smyth gateway: ``https://host/a2a/<Agent>``).
        name: The tool's name, as the model sees it.
        description: What the remote agent does, for the model.
        key_secret: The worker secret holding the bearer key the remote agent's card
            asks for (a smyth gateway's API key); ``None``: no key is sent.
        timeout: How long one attempt waits for the remote task's answer.
        effect: The call's effect class (it starts work elsewhere: a side effect).

    Returns:
        The tool; put it in ``AgentConfig(tools=[...])``.

    Raises:
        ToolDefinitionError: A URL that is not http(s) or a name the model cannot use.

    Added in 0.9.0.
    """
    if not url.startswith(("https://", "http://")):
        raise ToolDefinitionError(f"a2a_agent needs an http(s) URL, not {url!r}")
    if not _NAME.match(name):
        raise ToolDefinitionError(
            f"a2a_agent name {name!r}: letters, digits, '_' and '-', starting with a letter"
        )
    secrets = [key_secret] if key_secret else []

    async def ask_remote_agent(message: str) -> str:
        """Send ``message`` to the remote agent and return its answer.

        Args:
            message: What to ask the remote agent, self-contained.
        """
        from smyth_temporal.a2a._call import call_remote  # the worker side: a2a-sdk

        context = tool_context()
        key = context.secrets.get(key_secret) if key_secret else None
        message_id = a2a_message_id(context.workflow_id, context.idempotency_key)
        return await call_remote(url, message, message_id=message_id, key=key, timeout=timeout)

    ask_remote_agent.__qualname__ = f"a2a_agent.{name}"
    return tool(
        name=name,
        description=description,
        effect=effect,
        timeout=timeout,
        secrets=secrets,
        local=False,  # it heartbeats: a lost worker is noticed in seconds
    )(ask_remote_agent)
