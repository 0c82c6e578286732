"""What a task's Redis stream holds, and how to read it back.

One stream per task; one entry per numbered event (fields ``seq``, ``kind``, ``final``,
``data``: the event's wire JSON), plus ``close`` markers (``kind`` only meaningful) when a turn's
log closes without a final event (a shutdown, a failed recovery), so that followers in other
processes end where local subscribers end. Entries are added with Redis's own ids (``*``): the
sequence number is a field, because a turn recovered after a crash may number again from the
last stored event, and an explicit id would then be refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..a2a.types import Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent, WireModel
from ..runtime.events import Event

__all__ = ["CLOSE", "Entry", "StreamId", "decode", "encode", "format_id", "parse_id", "replay_after",
           "run_of"]

StreamId = tuple[int, int]
CLOSE = "close"
_MODELS: dict[str, type[WireModel]] = {
    "task": Task,
    "status-update": TaskStatusUpdateEvent,
    "artifact-update": TaskArtifactUpdateEvent,
}


def parse_id(raw: bytes | str) -> StreamId:
    text = raw.decode() if isinstance(raw, bytes) else raw
    ms, _, n = text.partition("-")
    return int(ms), int(n or 0)


def format_id(stream_id: StreamId) -> str:
    return f"{stream_id[0]}-{stream_id[1]}"


@dataclass(frozen=True)
class Entry:
    id: StreamId
    seq: int
    kind: str
    final: bool
    data: bytes

    @property
    def closes(self) -> bool:
        """Does a follower's stream end here (the final event, or a close marker)?"""
        return self.final or self.kind == CLOSE

    @cached_property
    def event(self) -> Event:
        """Parsed once, however many subscribers get it (wire objects are never mutated)."""
        return self.seq, _MODELS[self.kind].model_validate_json(self.data)


def encode(seq: int, payload: WireModel | None, final: bool) -> dict[bytes, bytes]:
    kind = CLOSE if payload is None else str(getattr(payload, "kind", ""))
    return {
        b"seq": str(seq).encode(),
        b"kind": kind.encode(),
        b"final": b"1" if final else b"0",
        b"data": b"" if payload is None else payload.to_json(),
    }


def decode(raw_id: bytes | str, fields: dict[bytes, bytes]) -> Entry:
    return Entry(
        id=parse_id(raw_id),
        seq=int(fields[b"seq"]),
        kind=fields[b"kind"].decode(),
        final=fields.get(b"final") == b"1",
        data=fields.get(b"data", b""),
    )


def run_of(entries: list[Entry]) -> list[Entry]:
    """The events of the latest unbroken numbering: walking back from the end while each event
    is numbered one below the next (close markers are skipped). A turn recovered after a crash
    may number again from the last stored event; what came before is then another run."""
    events = [e for e in entries if e.kind != CLOSE]
    start = len(events)
    while start > 0 and (start == len(events) or events[start - 1].seq == events[start].seq - 1):
        start -= 1
    return events[start:]


def replay_after(entries: list[Entry], seq: int) -> list[Event] | None:
    """The events after ``seq``, or ``None`` when some of them are no longer in the stream
    (what ``EventLog.replay_after`` answers in one process)."""
    run = run_of(entries)
    if not run:
        return None
    if seq >= run[-1].seq:
        return []
    if run[0].seq > seq + 1:
        return None
    return [e.event for e in run if e.seq > seq]
