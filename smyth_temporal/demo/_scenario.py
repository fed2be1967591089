"""The demo's story, step by step: a killed worker, an approval, and a finished run.

1. make sure a Temporal server answers (reuse one, or start the embedded dev server);
2. start a worker process and, once it polls, an agent run;
3. print the run's progress from its ``state`` query, one line per step and result;
4. while a tool call is running (two steps in), kill the worker with SIGKILL;
5. start a new worker process, and show the same run carry on where it was;
6. when the agent asks to sell shares, get the request decided (see ``_approvals``);
7. print the result and what the tools' ledgers and the run's history prove (see
   ``_checks`` and ``_summary``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import TextIO

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from smyth_temporal.clients import AgentClient
from smyth_temporal.demo._approvals import Approver
from smyth_temporal.demo._checks import check_ledger
from smyth_temporal.demo._example import (
    AGENT_NAME,
    GATED_TOOL,
    KILL_FROM_STEP,
    SLOW_TOOL,
    Execution,
    RunFiles,
    find_example,
    read_entries,
    read_executions,
)
from smyth_temporal.demo._observed import Observed
from smyth_temporal.demo._options import DemoError, DemoOptions
from smyth_temporal.demo._processes import Worker, Workers, temporal_server
from smyth_temporal.demo._render import LINE_WIDTH, Narrator, one_line
from smyth_temporal.demo._summary import summarize
from smyth_temporal.devserver import DEFAULT_STATE_DIR, register_search_attributes
from smyth_temporal.exceptions import SmythError
from smyth_temporal.settings import ModelSettings, Settings
from smyth_temporal.types.agent import AgentInput, AgentResult, AgentState
from smyth_temporal.types.visibility import SEARCH_ATTRIBUTES

__all__ = ["Scenario"]

_POLL_INTERVAL = 0.1
_QUERY_TIMEOUT = 2.0
"""A query needs a worker; while there is none it would hang, so it is cut short."""
_FINAL_QUERY_TIMEOUT = 10.0


class Scenario:
    """One run of the demo: its files, worker processes, and what it observed."""

    def __init__(self, options: DemoOptions, out: TextIO) -> None:
        """Prepare a run (nothing starts until ``run()``).

        Raises:
            DemoError: The example is not found, or ``openai`` has no API key.
        """
        self.started = time.time()
        self.narrator = Narrator(out, self.started)
        self.example = find_example()
        self.timeout = options.timeout
        self.keep_server = options.keep_server
        self.wants_interactive = options.interactive
        # A person can only answer on a terminal; without one (CI, a pipe) waiting
        # would hang until the timeout, so the script decides instead.
        self.interactive = options.interactive and sys.stdin.isatty()
        has_key = ModelSettings.load().openai_api_key is not None
        self.model = options.model or ("openai" if has_key else "scripted")
        if self.model == "openai" and not has_key:
            raise DemoError(
                "--model openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for endpoints "
                "other than OpenAI's); --model scripted runs offline"
            )
        # A task queue of its own: no other worker can take the demo's tasks, and the
        # server's list of pollers shows exactly the demo's workers.
        self.settings = Settings.load(
            address=options.address,
            namespace=options.namespace,
            task_queue=f"smyth-demo-{uuid.uuid4().hex[:8]}",
        )
        self.files = RunFiles.under(DEFAULT_STATE_DIR.resolve() / "demo", self.example)
        self.observed = Observed(workflow_id=f"market-monitor-demo-{uuid.uuid4().hex[:8]}")

    async def run(self) -> int:
        """Run the story and prove it.

        Returns:
            0 when the run recovered and every proof holds.

        Raises:
            DemoError: A proof failed, or the demo could not show what it set out to.
        """
        shutil.rmtree(self.files.root, ignore_errors=True)
        self.files.root.mkdir(parents=True)
        text = self.narrator.text
        text(
            "smyth demo: an agent's worker is killed mid-run, and the agent waits for a "
            "person's approval; it finishes anyway",
            style="bold",
        )
        text()
        if self.wants_interactive and not self.interactive:
            text("(--interactive needs a terminal on stdin; the script approves instead)")
            text()
        async with temporal_server(self.settings, keep=self.keep_server) as server:
            if server is None:
                self.narrator.line("temporal", f"using the server at {self.settings.address}")
            else:
                self.narrator.line(
                    "temporal", f"started a dev server at {server.address} (UI {server.ui_url})"
                )
            agents = await AgentClient.connect(self.settings)
            await self._ensure_search_attributes(agents)
            approver = Approver(
                agents,
                self.narrator,
                self.observed,
                settings=self.settings,
                interactive=self.interactive,
            )
            workers = Workers(
                agents,
                self.settings,
                example=self.example,
                model=self.model,
                files=self.files.root,
                ledger=self.files.alerts,
            )
            try:
                result = await self._run_agent(agents, workers, approver)
                executions = read_executions(self.files.executions)
                proof = check_ledger(
                    executions,
                    read_entries(self.files.alerts),
                    completed_before_kill=self.observed.completed_before_kill,
                    killed_pid=workers.started[0].pid,
                    trades=read_entries(self.files.trades),
                )
                approvals = await approver.prove(executions)
                for approval in approvals:
                    proof.problems += approval.problems
                summarize(
                    self.narrator,
                    result,
                    proof,
                    approvals,
                    observed=self.observed,
                    workers={worker.pid: worker.name for worker in workers},
                    files=self.files,
                    started=self.started,
                )
            finally:
                await approver.cancel()
                workers.stop()
                if server is not None and self.keep_server:
                    text(
                        f"The dev server keeps running at {server.address}; the run's "
                        f"history: {server.ui_url}/namespaces/{self.settings.namespace}/"
                        f"workflows/{self.observed.workflow_id}"
                    )
        if proof.problems:
            raise DemoError("; ".join(proof.problems))
        if len(self.observed.run_ids) != 1:
            raise DemoError(f"the workflow changed runs: {sorted(self.observed.run_ids)}")
        return 0

    async def _ensure_search_attributes(self, agents: AgentClient) -> None:
        """Make sure the server can list agents waiting for approvals.

        A dev server the demo (or ``smyth dev``) started has the search attributes;
        another one may not, and then the agent's first upsert would fail its workflow
        task over and over: register them (idempotent, like ``temporal operator
        search-attribute create``) rather than hang.
        """
        names = [key.name for key in SEARCH_ATTRIBUTES]
        try:
            listed = await agents.client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=agents.client.namespace),
                timeout=timedelta(seconds=5),
            )
            missing = [name for name in names if name not in listed.custom_attributes]
            if missing:
                await register_search_attributes(agents.client)
        except RPCError as exc:
            raise DemoError(
                f"cannot check or register the search attributes {', '.join(names)} on "
                f"{self.settings.address} ({exc.message}); register them with `temporal "
                "operator search-attribute create --name SmythStatus --type Keyword --name "
                "SmythPendingApprovals --type Int`"
            ) from exc
        if missing:
            self.narrator.line("temporal", f"registered the search attributes {', '.join(missing)}")

    async def _run_agent(
        self, agents: AgentClient, workers: Workers, approver: Approver
    ) -> AgentResult:
        """Start a worker and the run, kill the worker mid-run, and see the run finish."""
        narrator, observed = self.narrator, self.observed
        first = await workers.spawn()
        narrator.line(first.name, f"started, pid {first.pid}, {self.model} model")
        await workers.wait_polling(first)
        narrator.line(first.name, f"polling task queue {self.settings.task_queue}")

        handle = await agents.start(
            AGENT_NAME, AgentInput(prompt=self.example.prompt), id=observed.workflow_id
        )
        observed.started = time.time()
        narrator.line("agent", f"started {AGENT_NAME}, workflow id {handle.id}")
        narrator.line("task", one_line(self.example.prompt, LINE_WIDTH))
        result_task = asyncio.create_task(agents.result(handle.id))
        # Queries run in the background: while no worker answers them, the loop still
        # watches the ledger and the pollers every _POLL_INTERVAL, so what it measures
        # stays accurate.
        query: asyncio.Task[AgentState | None] | None = None
        query_sent = 0.0
        replacement: Worker | None = None
        try:
            while not result_task.done():
                if time.time() > self.started + self.timeout + approver.human_seconds():
                    raise DemoError(f"the run did not finish within {self.timeout:g}s")
                approver.check()  # an approval that went wrong ends the demo
                if query is None or query.done():
                    if query is not None:
                        self._observe(approver, query.result(), sent=query_sent)
                    query_sent = time.time()
                    query = asyncio.create_task(self._query(agents))
                executions = read_executions(self.files.executions)
                if replacement is None:
                    first.check_alive()
                    running = [e for e in executions if e.pid == first.pid and e.kill_point]
                    if running:
                        replacement = await self._crash(agents, workers, approver, running)
                else:
                    replacement.check_alive()
                    await self._watch_recovery(workers, replacement, executions)
                await asyncio.wait({result_task}, timeout=_POLL_INTERVAL)
            result = result_task.result()
            observed.finished = time.time()
        finally:
            for task in (result_task, query):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        final_sent = time.time()
        observed.final_state = await self._query(agents, timeout=_FINAL_QUERY_TIMEOUT)
        self._observe(approver, observed.final_state, sent=final_sent)
        # A decision the demo has not printed yet (a person's, seen at the next look).
        await approver.wait_printed(_FINAL_QUERY_TIMEOUT)
        narrator.line("agent", f"{result.status} after {result.steps} steps")
        if observed.killed_at is None:
            raise DemoError(
                f"the run finished before {SLOW_TOOL} or a tool call of step "
                f"{KILL_FROM_STEP} or later ran, so there was no moment to kill the worker "
                "(the scripted model always gives one: --model scripted)"
            )
        if not observed.approvals:
            raise DemoError(
                f"the run finished without asking for an approval (of {GATED_TOOL}), so "
                "there was nothing to approve (the scripted model always asks: --model "
                "scripted)"
            )
        return result

    async def _crash(
        self,
        agents: AgentClient,
        workers: Workers,
        approver: Approver,
        running: Sequence[Execution],
    ) -> Worker:
        """Kill the first worker while ``running`` runs on it; start its replacement."""
        observed, worker = self.observed, workers.started[0]
        # What Temporal has recorded as done, as late as possible before the kill.
        sent = time.time()
        self._observe(approver, await self._query(agents), sent=sent)
        worker.kill()
        observed.killed_at = time.time()
        observed.killed_step = max(e.step for e in running)
        observed.cut_off = list(running)
        observed.completed_before_kill = list(observed.results)
        labels = ", ".join(e.label for e in running)
        self.narrator.line(
            "CRASH", f"{labels} running on {worker.name}: SIGKILL to pid {worker.pid}"
        )
        replacement = await workers.spawn()
        self.narrator.line(replacement.name, f"started, pid {replacement.pid}, to take over")
        return replacement

    async def _watch_recovery(
        self, workers: Workers, worker: Worker, executions: Sequence[Execution]
    ) -> None:
        """Print when the replacement polls, and when the cut-off call runs again."""
        observed = self.observed
        assert observed.killed_at is not None
        if observed.replacement_polling is None and await workers.is_polling(worker):
            observed.replacement_polling = time.time()
            self.narrator.line(
                worker.name,
                f"polling, {observed.replacement_polling - observed.killed_at:.1f}s after the kill",
            )
        if observed.rerun_started is None:
            keys = {e.key for e in observed.cut_off}
            rerun = [e for e in executions if e.pid == worker.pid and e.key in keys]
            if rerun:
                observed.rerun_started = rerun[0].started
                self.narrator.line(
                    "retry",
                    f"{rerun[0].label} attempt {rerun[0].attempt} starts on {worker.name}, "
                    f"{observed.rerun_started - observed.killed_at:.1f}s after the kill",
                    at=rerun[0].started,
                )

    async def _query(
        self, agents: AgentClient, *, timeout: float = _QUERY_TIMEOUT
    ) -> AgentState | None:
        """The agent's state, or ``None`` when no worker answers in time."""
        try:
            async with asyncio.timeout(timeout):
                return await agents.state(self.observed.workflow_id)
        except (TimeoutError, SmythError, RPCError, WorkflowQueryFailedError):
            return None  # no worker answers right now (or the server is busy): ask again

    def _observe(self, approver: Approver, state: AgentState | None, *, sent: float) -> None:
        """Take in a state, of a query sent at ``sent``.

        Decisions first, so that a decision is always printed before the tool result
        it let happen; then the new messages; then the new requests.
        """
        if state is None:
            return
        approver.take_decisions(state, sent=sent)
        self._show(state)
        approver.take_requests(state)

    def _show(self, state: AgentState) -> None:
        """Print the messages of the conversation not printed yet."""
        observed = self.observed
        observed.run_ids.add(state.run_id)
        offset = state.message_count - len(state.messages)
        if offset > observed.shown:
            self.narrator.line("...", f"{offset - observed.shown} messages not shown")
        # A state older than what was shown (a slow query) gives an empty slice here.
        new = state.messages[max(observed.shown, offset) - offset :]
        observed.shown = max(observed.shown, state.message_count)
        if new and observed.killed_at is not None and observed.first_progress is None:
            observed.first_progress = time.time()
        for message in new:
            for call in message.tool_calls or ():
                observed.calls[call.id] = call
            if message.role == "tool" and message.step is not None and message.tool_call_id:
                observed.results.append((message.step, message.tool_call_id))
            asked = observed.calls.get(message.tool_call_id or "")
            self.narrator.message(message, asked)
