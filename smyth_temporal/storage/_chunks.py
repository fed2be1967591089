"""Where a stored payload is cut into chunks: boundaries that depend on its content only.

Consecutive model requests of one conversation are the same JSON plus a few new
messages, and a tool's result comes back inside the next request as a message. Cut at
the right places, both share almost all their chunks, so the store keeps each message
once instead of once per turn. The cuts, all found with C-speed searches for literals
(a payload can be megabytes, and Python loops over its bytes would be too slow):

- before every message object (``{"role":"...``, with the comma that precedes it,
  so a message is the same chunk whether it is the last of a list or not);
- before the ``]`` that closes a list of objects (``}],"``), so the fields after a
  message list (tool schemas, the step number) are chunks of their own;
- around the text of every ``"content"`` string of at least ``LONG_STRING`` bytes (a
  message's or a tool result's), so the same text is one chunk whether it sits in the
  tool's result or in a later request's ``tool`` message.

JSON escapes ``"`` inside strings, so a message's text cannot fake a message start;
and a false cut would only cost sharing, never correctness.
"""

from __future__ import annotations

import re

__all__ = ["LONG_STRING", "split"]

LONG_STRING = 1024
"""Bytes from which the text of a ``"content"`` string is a chunk of its own."""

# Plain literals: re finds them with a fast substring search, where a pattern with an
# optional or alternative start would be tried at every byte (50 ms for 1.7 MB).
_MESSAGE = re.compile(rb'\{"role":"')
_LIST_END = re.compile(rb'\}\],"')
_CONTENT = re.compile(rb'"content":"')
_COMMA = ord(",")
_BACKSLASH = ord("\\")


def split(data: bytes) -> list[bytes]:
    """``data`` cut at its content-defined boundaries; ``[data]`` when it has none.

    The pieces concatenate back to ``data``; none is empty.
    """
    cuts: set[int] = set()
    for match in _MESSAGE.finditer(data):
        start = match.start()
        cuts.add(start - 1 if start and data[start - 1] == _COMMA else start)
    cuts.update(match.start() + 1 for match in _LIST_END.finditer(data))
    for match in _CONTENT.finditer(data):
        end = _string_end(data, match.end())
        if end - match.end() >= LONG_STRING:
            cuts.update((match.end(), end))
    cuts.discard(0)
    cuts.discard(len(data))
    if not cuts:
        return [data]
    ordered = sorted(cuts)
    starts = [0, *ordered]
    ends = [*ordered, len(data)]
    return [data[start:end] for start, end in zip(starts, ends, strict=True)]


def _string_end(data: bytes, start: int) -> int:
    """Where the JSON string whose text starts at ``start`` ends (its closing quote)."""
    end = data.find(b'"', start)
    while end > 0:
        escapes = 0
        while data[end - 1 - escapes] == _BACKSLASH:
            escapes += 1
        if escapes % 2 == 0:
            return end
        end = data.find(b'"', end + 1)
    return start  # not closed: not a string worth a chunk
