"""Putting a replayed update's acceptance where the original run had it (workflow code).

Live, an update that reaches a run in the same workflow task as the event its handler
depends on (an approval decision and the model call whose completion makes the
request) can be delivered after the workflow code has run on that event: its
validator sees the request and the acceptance lands in history after the commands
that code made. On replay, Temporal (Core and temporalio, as of 1.35) orders update
jobs before the activation's other jobs, so temporalio writes the acceptance command
first, before any workflow code runs, and the replay no longer matches history (the
class of sdk-rust#943 and sdk-python#673).

A handler that finds, on replay, that what it needs is not there yet waits for it;
``UpdateAcceptance.move_last`` then moves its acceptance command behind the commands
made meanwhile, where the original run had it. This touches temporalio internals (the
activation's pending commands), so it is used only where replay fails without it.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

__all__ = ["UpdateAcceptance"]


class UpdateAcceptance:
    """The acceptance command of the update whose handler is running now.

    Take it at the start of the handler (temporalio adds the acceptance just before
    it calls the handler); ``move_last`` moves it to the end of the commands so far.
    """

    def __init__(self) -> None:
        commands = _commands()
        last = commands[-1] if commands else None
        if last is None or not last.update_response.HasField("accepted"):
            raise RuntimeError("no update acceptance to move: call this first in a handler")
        self._protocol_instance_id: str = last.update_response.protocol_instance_id

    def move_last(self) -> None:
        """Move the acceptance behind every command made since the handler started."""
        commands = _commands()
        for index, command in enumerate(commands):
            response = command.update_response
            if response.protocol_instance_id == self._protocol_instance_id and response.HasField(
                "accepted"
            ):
                moved = type(command)()
                moved.CopyFrom(command)
                del commands[index]
                commands.append(moved)
                return


def _commands() -> Any:
    # The activation's commands so far (a protobuf repeated field); temporalio keeps
    # no reference to an acceptance after adding it, so moving a copy is safe.
    runtime: Any = workflow._Runtime.current()
    return runtime._current_completion.successful.commands
