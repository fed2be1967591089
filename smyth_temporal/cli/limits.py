"""``smyth limits set|show|clear``: fleet-wide model rate limits and tenant weights.

The server holds them, on the agents' model task queue (``<queue>-models``), for every
worker at once (``AgentClient.limits``).

Added in 0.5.0.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import typer

from smyth_temporal.cli._common import CommonOptions, command, print_json, run
from smyth_temporal.clients import DEFAULT, AgentClient, ModelLimits

__all__ = ["app"]

app = typer.Typer(
    help="Fleet-wide rate limits for agents' model calls, and each tenant's share, held by "
    "the Temporal server for every worker at once.",
    no_args_is_help=True,
)


def _rate(text: str) -> float | Literal["default"]:
    if text == DEFAULT:
        return DEFAULT
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"not a number: {text}") from None
    if not value > 0:
        raise typer.BadParameter(f"must be more than 0: {text}")
    return value


def _weight(text: str) -> tuple[str, float | Literal["default"]]:
    tenant, equals, value = text.partition("=")
    if not equals or not tenant:
        raise typer.BadParameter(f"expected TENANT=WEIGHT, got {text!r}")
    return tenant, _rate(value)


def _checked_weight(text: str) -> str:
    _weight(text)
    return text


_EPILOG = (
    "A limit is a number of model calls per second, or 'default' to remove it. While a "
    "limit or a weight is set, agents send model calls to their own task queue "
    "(<queue>-models, AgentConfig.model_task_queue) with the tenant as fairness key; the "
    "server dispatches them at most this fast, for the whole fleet, and shares them between "
    "tenants by weight. Workers notice a change within 5 s. Without any, model calls stay on "
    "the agents' queue, dispatched eagerly (50 ms less per step). A queue idle for a while "
    "may let one second's worth of calls through at once before the rate holds.\n\n"
    "examples:\n\n"
    "  smyth limits set --model-rps 5 --per-tenant-rps 1 --tenant-weight acme=2\n\n"
    "  smyth limits set --model-rps default\n\n"
    "  smyth limits show --json"
)


@command(
    app,
    "set",
    task_queue=True,
    epilog=_EPILOG,
    help="Set the rate of model calls for the whole fleet, per tenant, and tenants' weights.",
)
def set_limits(
    options: CommonOptions,
    model_rps: Annotated[
        float | None,
        typer.Option(
            "--model-rps",
            parser=_rate,
            metavar="RPS",
            help="model calls per second, all tenants together",
        ),
    ] = None,
    per_tenant_rps: Annotated[
        float | None,
        typer.Option(
            "--per-tenant-rps",
            parser=_rate,
            metavar="RPS",
            help="model calls per second for each tenant (times its weight)",
        ),
    ] = None,
    tenant_weight: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant-weight",
            parser=_checked_weight,
            metavar="TENANT=WEIGHT",
            help="a tenant's share (default 1); repeat for more tenants",
        ),
    ] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", metavar="TEXT", help="why, recorded by the server")
    ] = None,
) -> None:
    """Set model-call limits."""
    if model_rps is None and per_tenant_rps is None and not tenant_weight:
        raise typer.BadParameter("give --model-rps, --per-tenant-rps or --tenant-weight")

    async def go() -> None:
        agents = await AgentClient.connect(options.settings())
        limits = await agents.limits.set(
            model_rps=model_rps,
            per_tenant_rps=per_tenant_rps,
            tenant_weights=dict(_weight(w) for w in tenant_weight or []),
            reason=reason,
        )
        _show(limits)

    run(go())


@command(app, "show", task_queue=True, help="The model-call limits in force, and tenants' weights.")
def show(
    options: CommonOptions,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Show model-call limits."""

    async def go() -> None:
        agents = await AgentClient.connect(options.settings())
        limits = await agents.limits.get()
        if as_json:
            print_json(dataclasses.asdict(limits))
        else:
            _show(limits)

    run(go())


@command(app, "clear", task_queue=True, help="Remove every model-call limit and tenant weight.")
def clear(options: CommonOptions) -> None:
    """Remove model-call limits."""

    async def go() -> None:
        agents = await AgentClient.connect(options.settings())
        _show(await agents.limits.clear())

    run(go())


def _show(limits: ModelLimits) -> None:
    def rate(value: float | None) -> str:
        return f"{value:g}/s" if value is not None else "none"

    print(f"task queue   {limits.task_queue}")
    print(f"model calls  {rate(limits.model_rps)}")
    print(f"per tenant   {rate(limits.per_tenant_rps)}")
    weights = ", ".join(f"{t}={w:g}" for t, w in sorted(limits.tenant_weights.items()))
    print(f"weights      {weights or 'all 1'}")
