"""Record a run whose payloads are in the store's whole-payload layout (before 0.5.0).

From the repository root::

    .venv/bin/python -m tests.helpers.record_legacy_store

It runs ``PageReader`` (``tests/storage/test_chunked_store.py``) for two pages with the store's
whole-payload layout (``ContentAddressedFileDriver(chunked=False)``, byte for byte what
0.4 wrote) and a 256-byte threshold, then writes the history to
``tests/histories/legacy_store/page_reader.json`` and the store's files under
``tests/histories/legacy_store/payloads/``. ``test_chunked_store`` replays it and reads
every payload with today's driver: references written before the chunked layout must
keep working. Re-record only on purpose.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from temporalio.client import Client
from temporalio.converter import ExternalStorage
from temporalio.worker import Worker

from smyth_temporal import AgentClient, SmythPlugin
from smyth_temporal.models import ModelRequest, ModelResponse
from smyth_temporal.storage import ContentAddressedFileDriver
from smyth_temporal.testing import reply, start_dev_environment, tool_call
from tests.storage.test_chunked_store import PageReader

LEGACY = Path(__file__).parents[1] / "histories" / "legacy_store"
HISTORY = LEGACY / "page_reader.json"
PAYLOADS = LEGACY / "payloads"
WORKFLOW_ID = "history-legacy-store"
PAGES = 2
THRESHOLD = 256


def legacy_storage(root: Path, *, chunked: bool = False) -> ExternalStorage:
    """The store the recording used (``chunked=False``), or today's layout over it."""
    driver = ContentAddressedFileDriver(root, chunked=chunked)
    return ExternalStorage(drivers=[driver], payload_size_threshold=THRESHOLD)


class TwoPages:
    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step <= PAGES:
            return tool_call("read_page", step=request.step)
        return reply(f"read {PAGES} pages")


async def main() -> None:
    env = await start_dev_environment()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp)
            client = Client(
                env.client.service_client,
                namespace=env.client.namespace,
                plugins=[SmythPlugin(payload_storage=legacy_storage(store))],
            )
            worker_client = Client(
                env.client.service_client,
                namespace=env.client.namespace,
                plugins=[SmythPlugin(model=TwoPages(), payload_storage=legacy_storage(store))],
            )
            async with Worker(worker_client, task_queue="legacy", workflows=[PageReader]):
                agents = AgentClient(client, task_queue="legacy")
                await agents.start(PageReader, "Read two pages.", id=WORKFLOW_ID)
                await agents.result(WORKFLOW_ID)
            history = await client.get_workflow_handle(WORKFLOW_ID).fetch_history()
            shutil.rmtree(PAYLOADS, ignore_errors=True)
            LEGACY.mkdir(parents=True, exist_ok=True)
            HISTORY.write_text(history.to_json())
            shutil.copytree(store, PAYLOADS)
            print(f"wrote {HISTORY} and {len(list(PAYLOADS.rglob('*')))} store entries")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
