"""A tenant's budget across a fallback switch, through the Anthropic SDK and its fake API.

The primary model is overloaded and the turn moves to a fallback model that costs ten
times as much. The price table names the models as their vendor does (``claude-...``),
while the agent names them with their provider's prefix (``anthropic:claude-...``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from smyth_temporal import AgentClient, AgentInput, AgentResult
from smyth_temporal.models import load_price_table
from smyth_temporal.testing import (
    FakeAnthropicServer,
    agent_worker,
    anthropic_error,
    anthropic_turn,
)
from smyth_temporal.types.budget import BudgetSummary, Price, PriceTable
from smyth_temporal.types.messages import Usage
from tests.helpers.fallback_agents import ClaudeWithFallback
from tests.models.test_anthropic_agent import provider_for

# Per million tokens. A call's reservation assumes its prompt (chars / 4) and 1,024 reply
# tokens: about 0.12 at the primary's price, 1.2 at the backup's.
PRICES_TOML = """
["claude-primary*"]
input = 100.0
output = 100.0

["claude-backup*"]
input = 1000.0
output = 1000.0
"""

OVERLOADED = anthropic_error(529, "overloaded_error", "Overloaded")


@pytest.fixture(autouse=True)
def prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES_TOML)
    monkeypatch.setenv("SMYTH_PRICES_FILE", str(path))
    return path


async def run_with_budget(
    client: Client, agents: AgentClient, task_queue: str, daily: float
) -> tuple[AgentResult, list[str], BudgetSummary]:
    """One run of ``ClaudeWithFallback`` for a tenant with ``daily`` to spend.

    Returns:
        The run's result, the models the fake API was asked for, and the tenant's
        budget after the run.
    """
    tenant = f"fallback-{daily}-{task_queue}"
    agents.task_queue = task_queue
    async with FakeAnthropicServer() as fake:
        fake.enqueue(OVERLOADED, OVERLOADED, anthropic_turn("Markets are calm."))
        async with agent_worker(
            client, ClaudeWithFallback, model=provider_for(fake), task_queue=task_queue
        ):
            assert await agents.wait_for_worker(timeout=30)
            await agents.budgets.set(tenant, daily=daily)
            handle = await agents.start(
                ClaudeWithFallback, AgentInput(prompt="How are markets?", tenant=tenant)
            )
            result = await agents.result(handle.id)
            summary = await agents.budgets.show(tenant)
        sent = [r.json["model"] for r in fake.requests]
    assert summary is not None
    return result, sent, summary


async def test_a_fallback_model_is_charged_at_its_own_price_and_failed_attempts_give_back(
    client: Client, agents: AgentClient, task_queue: str, prices: Path
) -> None:
    result, sent, summary = await run_with_budget(client, agents, task_queue, daily=5.0)

    assert result.status == "completed"
    assert sent == ["claude-primary", "claude-primary", "claude-backup"]
    # Only the backup's answer cost anything, at the backup's price ...
    table = load_price_table(prices)
    usage = result.usage
    assert usage.cost == pytest.approx(table.cost("anthropic:claude-backup", usage))
    assert usage.cost == pytest.approx(10 * table.cost("anthropic:claude-primary", usage))
    # ... and the budget counted exactly that: the two overloaded attempts at the
    # primary released what they held, and nothing is left held.
    assert summary.spent_today == pytest.approx(usage.cost)
    assert (summary.reserved, summary.in_flight, summary.refused) == (0.0, 0, 0)


async def test_a_fallback_the_budget_cannot_cover_is_refused_before_it_reaches_the_model(
    client: Client, agents: AgentClient, task_queue: str
) -> None:
    # 0.5 covers the primary's reservation (about 0.12) but not the backup's (about 1.2).
    # The backup's reservation was priced by "anthropic:claude-backup", which no entry
    # named: it held 0, the backup answered and the tenant spent what it did not have.
    result, sent, summary = await run_with_budget(client, agents, task_queue, daily=0.5)

    assert result.status == "over_budget"
    assert sent == ["claude-primary", "claude-primary"]
    assert result.usage.cost == 0.0
    assert (summary.spent_today, summary.reserved, summary.in_flight) == (0.0, 0.0, 0)
    assert summary.refused == 1


def test_a_provider_prefix_is_priced_by_the_model_name_and_an_entry_with_it_wins() -> None:
    cheap, dear = Price(input=1.0, output=1.0), Price(input=9.0, output=9.0)
    table = PriceTable(prices={"claude-sonnet*": cheap, "anthropic:claude-opus": dear, "8b": dear})
    assert table.price("anthropic:claude-sonnet-4-5") == cheap
    assert table.price("google:claude-sonnet-4-5") == cheap
    assert table.price("anthropic:claude-opus") == dear
    assert table.price("claude-opus") is None  # an entry with a prefix names that route only
    # Only the providers' prefixes are dropped: a bare name's tag is no model name.
    assert table.price("llama3:8b") is None
    assert table.price("anthropic:") is None
    assert PriceTable().cost("anthropic:claude-sonnet-4-5", Usage(input_tokens=10)) == 0.0
