"""Remote A2A agents as tools: ``a2a_agent("https://...")``.

```python
research = a2a_agent(
    "https://agents.example.com/a2a/Researcher",
    name="researcher",
    description="Researches a company and answers with sources.",
    key_secret="RESEARCH_KEY",  # the remote gateway's key, a worker secret
)

class Desk(AgentWorkflow):
    config = AgentConfig(model="gpt-5", tools=[research])
```

Each call is one tool activity that sends the model's message to the remote agent over
A2A 1.0 (JSON-RPC, the a2a-sdk's client) and returns the task's answer. The message id is
derived from the agent's workflow id and the call's idempotency key, so a retried
attempt (a crashed worker, a lost answer) sends the *same* message: a server that
deduplicates on ``messageId`` (a smyth gateway does: the message names its task)
re-attaches to the task the first attempt started instead of starting a second one.

- ``_agent``: ``a2a_agent``, the tool (importable without the a2a-sdk: workflow code
  reads its schema only);
- ``_call``: what the activity does (the a2a-sdk's client, its own retries off;
  errors classified retryable or not).

The call needs the ``a2a`` extra on the worker (``pip install 'smyth-temporal[a2a]'``);
without it the call fails, not retried, with that command.

Added in 0.9.0.
"""

from smyth_temporal.a2a._agent import DEFAULT_A2A_TIMEOUT, a2a_agent, a2a_message_id

__all__ = ["DEFAULT_A2A_TIMEOUT", "a2a_agent", "a2a_message_id"]
