"""``smyth budget show|set``: a tenant's daily and monthly spending limits.

Each tenant's budget is a long-lived workflow served by the agent workers
(``AgentClient.budgets``); model calls priced by the workers' price table reserve
their likely cost there before they are made.

Added in 0.5.0.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from smyth_temporal.cli._common import CommonOptions, command, print_json, run
from smyth_temporal.clients import AgentClient
from smyth_temporal.types.budget import BudgetSummary

__all__ = ["app"]

app = typer.Typer(
    help="Tenants' daily and monthly budgets for model calls, in the workers' price table's "
    "currency.",
    no_args_is_help=True,
)

NONE = "none"
"""What removes a limit on the command line."""


def _amount(text: str) -> float | None:
    if text == NONE:
        return None
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"not a number: {text}") from None
    return value  # the client refuses negative and non-finite amounts, in words


_TENANT = typer.Option(
    "--tenant", metavar="TENANT", help="the tenant (default: the key's, else 'default')"
)

_EPILOG = (
    "Amounts are in the currency of the workers' price table (SMYTH_PRICES_FILE, or "
    ".smyth/prices.toml); 'none' removes a limit, and a limit not given stays as it was. "
    "A model call whose likely cost would pass a limit is refused, and its agent ends "
    "with status over_budget.\n\n"
    "examples:\n\n"
    "  smyth budget set --tenant acme --daily 20 --monthly 400\n\n"
    "  smyth budget set --tenant acme --daily none\n\n"
    "  smyth budget show --tenant acme --json"
)


@command(
    app,
    "set",
    task_queue=True,
    epilog=_EPILOG,
    help="Set a tenant's daily and monthly spending limits (starts its budget).",
)
def set_budget(
    options: CommonOptions,
    tenant: Annotated[str | None, _TENANT] = None,
    daily: Annotated[
        str | None,
        typer.Option("--daily", metavar="AMOUNT", help="at most this much per UTC day"),
    ] = None,
    monthly: Annotated[
        str | None,
        typer.Option("--monthly", metavar="AMOUNT", help="at most this much per UTC month"),
    ] = None,
) -> None:
    """Set a tenant's budget."""
    if daily is None and monthly is None:
        raise typer.BadParameter("give --daily or --monthly (an amount, or 'none')")
    given: dict[str, Any] = {}
    if daily is not None:
        given["daily"] = _amount(daily)
    if monthly is not None:
        given["monthly"] = _amount(monthly)

    async def go() -> None:
        agents = await AgentClient.connect(options.settings())
        _show(await agents.budgets.set(tenant, **given))

    run(go())


@command(app, "show", task_queue=True, help="A tenant's limits, spending and reservations.")
def show(
    options: CommonOptions,
    tenant: Annotated[str | None, _TENANT] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Show a tenant's budget."""

    async def go() -> None:
        agents = await AgentClient.connect(options.settings())
        summary = await agents.budgets.show(tenant)
        if as_json:
            print_json(summary.model_dump(mode="json") if summary is not None else None)
        elif summary is None:
            print(f"tenant {tenant or agents.identity.tenant(None)!r} has no budget")
        else:
            _show(summary)

    run(go())


def _show(summary: BudgetSummary) -> None:
    def limit(value: float | None) -> str:
        return f"{value:g}" if value is not None else "none"

    limits = summary.limits
    print(f"tenant      {summary.tenant}")
    print(f"today       {summary.spent_today:.4f} of {limit(limits.daily)}  ({summary.day})")
    print(
        f"this month  {summary.spent_this_month:.4f} of {limit(limits.monthly)}  ({summary.month})"
    )
    print(f"reserved    {summary.reserved:.4f} by {summary.in_flight} call(s) in flight")
    print(f"refused     {summary.refused} call(s)")
