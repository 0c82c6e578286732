"""Our checkpointers' write methods with their signatures worked out once, at import.

At the start of every run LangGraph asks ``inspect.signature(checkpointer.aput_writes)`` whether
the saver takes ``task_path`` (``put_writes_accepts_task_path``). Worked out from the function
each time, that took 13 µs per run here, once per turn: a HITL round trip has two
(bench/README.md, "Speed, round nineteen"). ``inspect`` returns a function's ``__signature__``
when it has one (documented behaviour of ``inspect.signature``), which leaves 4 µs: binding the
method drops ``self``. The signature set is the function's own, so LangGraph's answer is the
same.
"""

from __future__ import annotations

import inspect
from typing import TypeVar

__all__ = ["signatures_worked_out_once"]

_C = TypeVar("_C", bound=type)

#: the methods LangGraph inspects per run
_INSPECTED = ("put_writes", "aput_writes")


def signatures_worked_out_once(cls: _C) -> _C:
    """Class decorator: each write method ``cls`` defines keeps its own signature."""
    for name in _INSPECTED:
        method = cls.__dict__.get(name)
        if method is not None:
            method.__signature__ = inspect.signature(method)
    return cls
