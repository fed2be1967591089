"""``smyth demo``: the end-to-end demo, run by ``smyth_temporal.demo``.

This module only maps the options to ``DemoOptions``; the demo package is imported
when the command runs, so no other command loads it (and a broken or absent demo
breaks only this command).
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from smyth_temporal.cli._common import CommonOptions, choice, command
from smyth_temporal.exceptions import ConfigurationError

__all__ = ["app"]

app = typer.Typer()


@command(
    app,
    "demo",
    help="Run the demo: a dev server, a worker and an agent, all in one. The agent survives "
    "the crash of its worker and waits for a person's approval; the demo proves both from "
    "the tools' ledgers and the run's history.",
)
def demo(
    options: CommonOptions,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            parser=choice("scripted", "openai"),
            metavar="[scripted|openai]",
            help="scripted (offline) or openai (OPENAI_API_KEY, OPENAI_BASE_URL); default: "
            "openai when OPENAI_API_KEY is set, else scripted",
        ),
    ] = None,
    keep_server: Annotated[
        bool, typer.Option("--keep-server", help="leave running a dev server the demo started")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="seconds the demo may take (default: the demo's, 120; the time you take to "
            "decide with --interactive does not count)",
        ),
    ] = None,
    interactive: Annotated[
        bool,
        typer.Option(
            "--interactive",
            help="decide the approval yourself, with `smyth approve` (or `smyth reject`) from "
            "another terminal, instead of letting the demo approve it; needs a terminal on "
            "stdin",
        ),
    ] = False,
) -> None:
    """Run the end-to-end demo."""
    try:
        from smyth_temporal.demo import DEFAULT_TIMEOUT, DemoOptions, run_demo
    except ImportError as exc:  # absent, or one of its dependencies is
        raise ConfigurationError(f"the demo is not available in this installation: {exc}") from exc
    chosen: Literal["scripted", "openai"] | None = (
        "openai" if model == "openai" else "scripted" if model == "scripted" else None
    )
    demo_options = DemoOptions(
        address=options.address,
        namespace=options.namespace,
        model=chosen,
        keep_server=keep_server,
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        interactive=interactive,
        log_level=options.log_level,
        log_format=options.log_format,
    )
    code = run_demo(demo_options)
    if code:
        raise typer.Exit(code)
