"""The ``smyth demo`` scenario: an agent survives the crash of its worker, and waits for a person.

The demo runs the market monitor of ``examples/market_monitor`` (a scripted model by
default, so no model endpoint or key is needed): it starts worker processes (and a
dev server if none answers), SIGKILLs the worker in the middle of a tool call, lets a
replacement carry the same run on, gets a risky sale approved (by the script, or by
the person running it with ``interactive``), and proves from the tools' ledgers and
the run's history that no completed call ran twice and that the sale ran once, after
its approval. Everything printed is measured during the run; nothing is canned. The
files of a run (ledgers, worker logs) are under ``.smyth/demo/``, fresh each time.

```python
from smyth_temporal.demo import DemoOptions, run_demo

exit_code = run_demo(DemoOptions(model="scripted"))
```

Modules, one concern each:

- ``_scenario``: the story, its steps in order;
- ``_approvals``: getting an approval request decided;
- ``_processes``: the worker processes and the dev server;
- ``_example``: where the example is, and reading its ledgers;
- ``_checks``: the proofs, pure functions over the ledgers and the history;
- ``_render`` and ``_summary``: the narration (Rich on a terminal, plain text
  elsewhere);
- ``_run``: ``run_demo``, its exit codes and signals.

Added in 0.1.0 (as ``smyth_temporal.cli._demo``; a package of its own since 0.3.0).
"""

from smyth_temporal.demo._approvals import APPROVAL_PAUSE, APPROVER
from smyth_temporal.demo._checks import (
    ApprovalProof,
    Decision,
    HistoryFacts,
    Proof,
    ToolScheduled,
    approve_command,
    check_approval,
    check_ledger,
    history_facts,
)
from smyth_temporal.demo._example import (
    AGENT,
    AGENT_NAME,
    GATED_TOOL,
    KILL_FROM_STEP,
    SCRIPTED_MODEL,
    SLOW_TOOL,
    Example,
    Execution,
    find_example,
    read_executions,
)
from smyth_temporal.demo._options import DEFAULT_TIMEOUT, DemoError, DemoOptions
from smyth_temporal.demo._run import run_demo

__all__ = [
    "AGENT",
    "AGENT_NAME",
    "APPROVAL_PAUSE",
    "APPROVER",
    "DEFAULT_TIMEOUT",
    "GATED_TOOL",
    "KILL_FROM_STEP",
    "SCRIPTED_MODEL",
    "SLOW_TOOL",
    "ApprovalProof",
    "Decision",
    "DemoError",
    "DemoOptions",
    "Example",
    "Execution",
    "HistoryFacts",
    "Proof",
    "ToolScheduled",
    "approve_command",
    "check_approval",
    "check_ledger",
    "find_example",
    "history_facts",
    "read_executions",
    "run_demo",
]
