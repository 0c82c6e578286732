"""``ChildTimeouts``: how long an orchestrator waits on a remote child, and for what.

A remote child is a server of someone else's: it may refuse connections, accept one and never
answer, or start answering and then fall silent. Each has its own bound (docs/orchestrators.md,
"Children that never answer"):

* ``connect``: opening the connection (and waiting for a free one in the server's pool);
* ``send``: a blocking ``message/send`` as a whole, for children that do not stream; its answer
  comes only when the child's turn is over, so this bounds the child's work, not its silence;
* ``quiet``: on a ``message/stream``, the longest wait for the next event or keep-alive ping,
  the first one included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DEFAULT_CHILD_TIMEOUTS", "ChildTimeouts"]


@dataclass(frozen=True)
class ChildTimeouts:
    """Seconds, each positive and finite. ``ChildTimeouts.of(5)`` applies 5 s to all three."""

    #: a TCP connect (and TLS) takes milliseconds; 10 s is also the A2A client's own default
    connect: float = 10.0
    #: a blocking send waits for the child's whole turn (a model with tools can take over a
    #: minute) and sees no byte before its end
    send: float = 120.0
    #: our servers ping every 15 s, so this is four pings missed; other servers may send
    #: nothing while their model thinks
    quiet: float = 60.0

    def __post_init__(self) -> None:
        for name in ("connect", "send", "quiet"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"ChildTimeouts.{name} must be a number of seconds, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"ChildTimeouts.{name} must be positive and finite, got {value!r}")
            object.__setattr__(self, name, float(value))

    @classmethod
    def of(cls, value: ChildTimeouts | float) -> ChildTimeouts:
        """``value`` itself, or one number of seconds for all three bounds."""
        if isinstance(value, ChildTimeouts):
            return value
        return cls(connect=value, send=value, quiet=value)


DEFAULT_CHILD_TIMEOUTS = ChildTimeouts()
