"""Run a worker for the research team: the researchers, the reviewer, and their memory.

    python -m examples.research_team.worker                    # scripted models, offline
    OPENAI_API_KEY=... python -m examples.research_team.worker  # a real model

It reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and SMYTH_TASK_QUEUE like every smyth
process, and keeps the team's memory where every worker does (Qdrant Edge under
SMYTH_MEMORY_PATH, default .smyth/memory, or the Qdrant server at QDRANT_URL).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os

from examples.research_team.script import scripted_models
from examples.research_team.workflows import Researcher, Reviewer
from smyth_temporal import Settings
from smyth_temporal.models import ModelProvider, ModelRouter, OpenAIProvider
from smyth_temporal.worker import run_worker


async def main(model: str | None = None) -> None:
    """Serve ``Researcher`` and ``Reviewer`` until interrupted.

    Args:
        model: ``scripted`` or ``openai``; default ``openai`` when ``OPENAI_API_KEY`` is
            set, else ``scripted``.
    """
    model = model or ("openai" if os.environ.get("OPENAI_API_KEY") else "scripted")
    provider: ModelProvider = (
        OpenAIProvider() if model == "openai" else ModelRouter(scripted_models())
    )
    settings = Settings.load()
    print(f"Serving Researcher and Reviewer ({model} models) on {settings.task_queue!r}")
    await run_worker([Researcher, Reviewer], settings=settings, model=provider)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["scripted", "openai"])
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a worker is stopped
        asyncio.run(main(parser.parse_args().model))
