"""A server-sent events decoder (WHATWG HTML "event stream interpretation").

Lines end with LF, CRLF or a lone CR, also when a CRLF is split across two chunks. ``data:``
lines of one event are joined with ``\\n``; ``:`` lines are comments (keep-alive pings); ``id:``
sets the last-event-id buffer, which persists across events as the spec says, so every event
carries the id a client would send back as ``Last-Event-ID``. An event left incomplete at the
end of the stream (no blank line after it) is discarded, as the spec requires.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEMessage", "aiter_lines", "aiter_sse"]

_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEMessage:
    data: str
    id: str | None = None
    event: str = "message"
    retry: int | None = None


class SSEDecoder:
    """Feed it lines (without their terminators); it returns a message at each blank line."""

    def __init__(self, last_event_id: str | None = None) -> None:
        self.last_event_id = last_event_id or ""
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None

    def line(self, line: str) -> SSEMessage | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEMessage | None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return SSEMessage(
            data="\n".join(data),
            id=self.last_event_id or None,
            event=event or "message",
            retry=retry,
        )


async def aiter_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """UTF-8 lines of a byte stream, split at LF, CRLF or CR; a leading BOM is dropped."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    first = True
    async for chunk in chunks:
        text = decoder.decode(chunk)
        if first and text:
            text = text.removeprefix("\ufeff")
            first = False
        pending += text
        lines, pending = _split(pending, final=False)
        for line in lines:
            yield line
    pending += decoder.decode(b"", final=True)
    lines, pending = _split(pending, final=True)
    for line in lines:
        yield line
    if pending:
        yield pending


def _split(text: str, *, final: bool) -> tuple[list[str], str]:
    """Complete lines of ``text`` and the rest. A CR at the very end waits for the next chunk
    (it may be the first half of a CRLF) unless the stream is over."""
    lines: list[str] = []
    start = 0
    for match in _EOL.finditer(text):
        if not final and match.group() == "\r" and match.end() == len(text):
            break
        lines.append(text[start : match.start()])
        start = match.end()
    return lines, text[start:]


async def aiter_sse(
    chunks: AsyncIterable[bytes], last_event_id: str | None = None
) -> AsyncIterator[SSEMessage]:
    """The messages of an event stream, given its raw bytes."""
    decoder = SSEDecoder(last_event_id)
    async for line in aiter_lines(chunks):
        message = decoder.line(line)
        if message is not None:
            yield message
