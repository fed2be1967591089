"""Typed results: the final answer in the shape of ``AgentConfig.output_type``.

Workflow code. The shape goes to the model with every turn (``ModelRequest.output``);
the model's final answer is validated here, in the workflow, with pydantic. An answer
that does not fit goes back to the model with the validation errors, for at most
``output_retries`` corrections; then the run ends with status ``invalid_output``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from smyth_temporal._logging import WorkflowLogger
from smyth_temporal.agent.conversation import Conversation
from smyth_temporal.types.agent import AgentStatus
from smyth_temporal.types.messages import Message
from smyth_temporal.types.model import OutputSchema

__all__ = ["OutputInvalid", "OutputType", "Settled", "TypedOutput"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)
_MAX_ERRORS = 10


class OutputInvalid(ValueError):
    """The answer does not fit the output type; the message lists why, for the model."""


class OutputType:
    """An output type, its validator and the schema the model is given.

    Args:
        output_type: A pydantic model, a ``TypedDict``, a dataclass or a primitive
            (``str``, ``int``, ``list[str]``, ...).

    Raises:
        pydantic.PydanticSchemaGenerationError: Pydantic cannot validate the type.

    Added in 0.3.0.
    """

    def __init__(self, output_type: Any) -> None:
        self.type = output_type
        self._adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
        self.schema = OutputSchema(name=_name(output_type), json_schema=self._adapter.json_schema())

    def parse(self, text: str) -> Any:
        """The answer as a value of the type.

        Raises:
            OutputInvalid: The text is not JSON of the type (for ``str``: never).
        """
        if self.type is str:
            return text
        fenced = _FENCE.match(text)
        body = fenced.group("body") if fenced else text
        try:
            return self._adapter.validate_json(body)
        except pydantic.ValidationError as exc:
            raise OutputInvalid(_describe(exc)) from None

    def validate(self, data: Any) -> Any:
        """A value of the type from its JSON form (the other side of ``dump``)."""
        return self._adapter.validate_python(data)

    def dump(self, value: Any) -> Any:
        """The JSON form of a value of the type."""
        return self._adapter.dump_python(value, mode="json")


@dataclass(frozen=True)
class Settled:
    """How a typed run ended."""

    answer: Message | None
    """The last answer (``None``: the steps ran out while correcting it)."""
    data: Any = None
    """The validated value, in JSON form."""
    status: AgentStatus = "completed"
    """``completed``, ``invalid_output`` or ``max_steps``."""


class TypedOutput:
    """Validates final answers and asks the model to correct those that do not fit.

    Args:
        output: The output type.
        retries: How many corrections the model may make.
        conversation: The conversation corrections are added to.
        log: The agent's logger.

    Added in 0.3.0.
    """

    def __init__(
        self, output: OutputType, retries: int, conversation: Conversation, log: WorkflowLogger
    ) -> None:
        self.output = output
        self._retries = retries
        self._conversation = conversation
        self._log = log

    async def settle(
        self, answer: Message, again: Callable[[], Awaitable[Message | None]]
    ) -> Settled:
        """Validate ``answer``; on failure ask again (``again``: think and act until an answer)."""
        for attempt in range(self._retries + 1):
            try:
                value = self.output.parse(answer.content or "")
            except OutputInvalid as exc:
                self._log.warning("agent.output_invalid", attempt=attempt + 1, error=str(exc))
                if attempt == self._retries:
                    return Settled(answer, status="invalid_output")
                self._conversation.add(Message.user(self.correction(exc)))
                retried = await again()
                if retried is None:
                    return Settled(None, status="max_steps")
                answer = retried
                continue
            return Settled(answer, data=self.output.dump(value))
        raise AssertionError("unreachable")  # pragma: no cover

    def correction(self, error: OutputInvalid) -> str:
        """The message asking the model to answer again in the right shape."""
        schema = json.dumps(self.output.schema.json_schema, separators=(",", ":"))
        return (
            f"Your final answer does not fit the required {self.output.schema.name}: {error} "
            f"Answer again with only a JSON value matching this schema: {schema}"
        )


def _name(output_type: Any) -> str:
    name = getattr(output_type, "__name__", None) or str(output_type)
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def _describe(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}"
        for e in errors[:_MAX_ERRORS]
    ]
    more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
    return "; ".join(parts) + more + "."
