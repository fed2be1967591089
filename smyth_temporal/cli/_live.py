"""Text a model is writing, shown as it arrives: ``smyth watch``, ``send`` and ``chat``.

Apart from ``_output`` (plain formatting) because it holds state: the message being
written, and on a terminal the Rich ``Live`` region that draws it.

Added in 0.3.0.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.text import Text

from smyth_temporal.clients import ReplyChunk

__all__ = ["LiveText", "stdout_console"]


def stdout_console() -> Console:
    """A console on stdout that prints text as given (no markup, no highlighting)."""
    return Console(markup=False, highlight=False, emoji=False)


class LiveText:
    """Messages shown as a model writes them, with lines printed above them.

    On an interactive terminal the message being written is a Rich ``Live`` region
    (as many of its last lines as fit, above an optional ``footer``): a retried model
    call redraws it from scratch, and a finished message is printed for good. Anywhere
    else (a pipe, a file) the text is written as it comes, exactly, without escape
    codes; a retry, which cannot be unwritten there, starts the message again on a line
    of its own.

    Use it as a context manager: leaving it ends the message being written as shown
    (so Ctrl-C keeps what was said) and erases the footer.

    Args:
        console: Where to show it (stdout's console).
        prefix: Written before each message (``Concierge> ``).
    """

    def __init__(self, console: Console, *, prefix: str = "") -> None:
        self.console = console
        self.prefix = prefix
        self.footer: RenderableType | None = None
        """Shown under the message being written, on a terminal only (``refresh`` it)."""
        self._key: str | None = None
        self._text: str | None = None  # the message being written (None: none is)
        self._live: Live | None = None
        self._stale = False  # the region changed since it was last drawn

    @property
    def interactive(self) -> bool:
        """Whether messages are drawn live (a terminal), or written as they come."""
        return self.console.is_interactive

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def show(self, key: str | None, text: str) -> None:
        """Message ``key`` reads ``text`` so far (a longer text, or a new one after a retry)."""
        if self._text is not None and key != self._key:
            self._finish(self._text)  # a new message: the last one is over
        if self.interactive:
            self._key, self._text = key, text
            self.refresh()
            return
        if self._text is None:
            self._write(self.prefix + text)
        elif text.startswith(self._text):
            self._write(text[len(self._text) :])
        else:  # a retry: what is written stays, the message starts again below it
            self._write("\n" + self.prefix + text)
        self._key, self._text = key, text

    def add(self, chunk: ReplyChunk) -> None:
        """Take a piece of a streamed reply (``AgentClient.send(..., stream=True)``)."""
        continued = not chunk.reset and self._text is not None and chunk.message_id == self._key
        self.show(chunk.message_id, (self._text or "") + chunk.text if continued else chunk.text)

    def end(self, key: str | None, text: str | None = None) -> None:
        """Message ``key`` is complete and says ``text`` (default: what was shown).

        ``text`` is the truth: the message as the conversation keeps it, whatever was
        shown of it before (or nothing, for a model that does not stream).
        """
        if self._text is not None and key != self._key:
            self._finish(self._text)
        if self._text is not None:
            self._finish(self._text if text is None else text)
        elif text is not None:
            self._print_message(text)

    def finish(self, text: str) -> None:
        """The message being written (or, if none is, a new one) is complete: ``text``."""
        self.end(self._key, text)

    def print(self, line: RenderableType) -> None:
        """Print ``line`` for good: above the region on a terminal, in order elsewhere."""
        if self._live is not None and self._stale:
            # Live draws its last rendering under what is printed: make it current.
            self.refresh()
        self.console.print(line, soft_wrap=True)

    def refresh(self) -> None:
        """Redraw the region (after ``footer`` changed); nothing to do off a terminal."""
        if not self.interactive:
            return
        if self._live is None:
            if self._text is None and self.footer is None:
                return
            # Refreshed on changes only: no thread redrawing behind the event loop.
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                get_renderable=self._region,
            )
            self._live.start()
        self._live.refresh()
        self._stale = False

    def close(self) -> None:
        """End the message being written as shown, and take the region down."""
        if self._text is not None:
            self._finish(self._text)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _finish(self, final: str) -> None:
        shown = self._text or ""
        self._key, self._text = None, None
        if self.interactive:
            self._stale = True
            self._print_message(final)
        elif final.startswith(shown):
            self._write(final[len(shown) :] + "\n")
        else:
            self._write("\n" + self.prefix + final + "\n")

    def _print_message(self, text: str) -> None:
        if self.interactive:
            self.print(Text(self.prefix + text))
        else:  # exactly the text: Rich would expand tabs and could wrap
            self._write(self.prefix + text + "\n")

    def _write(self, text: str) -> None:
        self.console.file.write(text)
        self.console.file.flush()

    def _region(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._text is not None:
            # Leave room for the footer and the cursor's line, or Live would cut the
            # region's end: the words being written.
            rows = max(self.console.height - 2, 1)
            parts.append(_Tail(Text(self.prefix + self._text), rows))
        if self.footer is not None:
            parts.append(self.footer)
        return Group(*parts)


class _Tail:
    """The last ``rows`` lines of ``text`` as the console wraps it."""

    def __init__(self, text: Text, rows: int) -> None:
        self.text = text
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.text, options.reset_height(), pad=False)
        for line in lines[-self.rows :]:
            yield from line
            yield Segment.line()
