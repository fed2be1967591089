"""Logging through structlog: replay-safe in workflow code, configured once per process."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from temporalio import workflow

from smyth_temporal._redaction import redact_event

__all__ = ["WorkflowLogger", "configure_logging"]


class WorkflowLogger:
    """A structlog logger for workflow code.

    Silent while the workflow replays (so a recovered run does not log its past
    again), and every event carries the workflow id, run id and agent name.
    """

    def __init__(self, name: str, **fields: Any) -> None:
        self._log = structlog.get_logger(name)
        self._fields = fields

    def bind(self, **fields: Any) -> WorkflowLogger:
        """A logger that adds ``fields`` to every event."""
        bound = WorkflowLogger.__new__(WorkflowLogger)
        bound._log = self._log
        bound._fields = {**self._fields, **fields}
        return bound

    def debug(self, event: str, **fields: Any) -> None:
        """Log at debug level."""
        self._emit("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log at info level."""
        self._emit("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log at warning level."""
        self._emit("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log at error level."""
        self._emit("error", event, fields)

    def _emit(self, level: str, event: str, fields: dict[str, Any]) -> None:
        if not workflow.in_workflow():
            getattr(self._log, level)(event, **self._fields, **fields)
            return
        if workflow.unsafe.is_replaying():
            return
        info = workflow.info()
        # Logging is I/O, which the sandbox forbids; it is safe here because nothing
        # it does feeds back into the workflow's decisions.
        with workflow.unsafe.sandbox_unrestricted():
            getattr(self._log, level)(
                event,
                workflow_id=info.workflow_id,
                run_id=info.run_id,
                agent=info.workflow_type,
                **self._fields,
                **fields,
            )


def configure_logging(level: str = "INFO", *, json: bool = False) -> None:
    """Set up structlog for a smyth process (worker, CLI), on stderr.

    Applications that configure structlog themselves need not call this.

    Args:
        level: The least severe level to show.
        json: One JSON object per line instead of human-friendly lines.
    """
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            # Last before rendering: secret values never reach the log, whatever logged them.
            redact_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
