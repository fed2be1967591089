"""``secret("NAME")``: a reference to a credential that only a worker resolves."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SECRET_NAME_PATTERN", "SecretRef", "secret"]

SECRET_NAME_PATTERN = r"^[A-Z][A-Z0-9_]{0,127}$"
"""Secret names look like environment variables: ``OPENAI_API_KEY``."""


class SecretRef(BaseModel):
    """A credential by name; the value is looked up on the worker, when it is used.

    Safe anywhere configuration goes (agent classes, tool options, MCP server headers,
    model providers): it holds only the name, so it can sit in workflow code and
    payloads without carrying the secret. ``format`` places the value in a larger
    string, for headers like ``Bearer <token>``.

    Added in 0.4.0.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=SECRET_NAME_PATTERN)
    """The secret's name in the worker's environment or secrets file."""
    format: str = "{}"
    """Where the value goes: ``"Bearer {}"``; ``"{}"`` is the value alone."""

    def __str__(self) -> str:
        return f"secret({self.name})"


def secret(name: str, *, format: str = "{}") -> SecretRef:
    """A reference to the secret ``name``, resolved on the worker where it is used.

    ```python
    token = secret("GIT_TOKEN", format="Bearer {}")
    HttpServer("https://git.example/mcp", headers={"Authorization": token})
    OpenAIProvider(api_key=secret("OPENAI_API_KEY"))

    @tool(secrets=["WEATHER_KEY"])
    async def forecast(city: str) -> str:
        key = tool_context().secrets["WEATHER_KEY"]
    ```

    Raises:
        ValueError: The name is not like ``UPPER_SNAKE_CASE``, or ``format`` has no ``{}``.

    Added in 0.4.0.
    """
    if format.count("{}") != 1:
        raise ValueError(f"a secret's format needs exactly one '{{}}', not {format!r}")
    return SecretRef(name=name, format=format)
