"""A workflow that reports which ``Tool`` objects its sandboxed module sees."""

from __future__ import annotations

from temporalio import workflow

from tests.agents import get_quote  # re-imported by the workflow sandbox for each run


@workflow.defn
class ToolIdentity:
    @workflow.run
    async def run(self) -> list[int]:
        return [id(get_quote), id(get_quote.arguments_model)]
