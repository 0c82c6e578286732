"""``TurnContext``: what an orchestrator's ``run_turn(ctx)`` sees and can do in one turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..errors import LlamonError
from .children import ChildCaller, ChildResult, child_context

__all__ = ["Emission", "TurnContext"]


@dataclass(frozen=True)
class Emission:
    """How the turn ends: a child's result, plain data, or a draft for a reviewer."""

    value: Any
    review: bool = False


class TurnContext:
    """One turn of an orchestrator.

    ``data``: the incoming message as data (``{"text": ..., **data parts}``), or on the turn
    that follows a forwarded question, the user's answer in the same shape.
    ``get_resume()`` returns the resume point the previous turn set (read once: a turn that does
    not set it again clears it); ``set_resume(intent=..., next_action=..., **more)`` records one.
    """

    def __init__(
        self, *, data: dict[str, Any], resume: dict[str, Any] | None, caller: ChildCaller,
        context_id: str, config: RunnableConfig,
    ) -> None:
        self.data = data
        self.context_id = context_id
        self.config = config
        self._resume = resume
        self._next_resume: dict[str, Any] | None = None
        self._caller = caller
        self.child_tasks: dict[str, str] = {}  # child id -> its task this turn talked to

    def get_resume(self) -> dict[str, Any] | None:
        return dict(self._resume) if self._resume else None

    def set_resume(self, *, intent: str, next_action: str, **more: Any) -> None:
        self._next_resume = {"intent": intent, "next_action": next_action, **more}

    @property
    def next_resume(self) -> dict[str, Any] | None:
        return self._next_resume

    async def call(self, child: str, data: Any = None, *, text: str | None = None) -> ChildResult:
        """Send ``data`` (a mapping, or text) to ``child`` on its own context for this
        conversation; a child waiting for input takes it as the answer."""
        payload: dict[str, Any] | None
        if isinstance(data, str) and text is None:
            text, payload = data, None
        elif data is None or isinstance(data, dict):
            payload = dict(data) if data else None
            if payload is not None and text is None and isinstance(payload.get("text"), str):
                text = payload.pop("text")
        else:
            raise LlamonError(f"ctx.call data must be a mapping or text, got {type(data).__name__}")
        task = await self._caller.call(
            child, child_context(self.context_id, child), text=text, data=payload or None
        )
        self.child_tasks[child] = task.id
        return ChildResult.from_task(child, task)

    def emit(self, result: Any, *, review: bool = False) -> Emission:
        """End the turn with ``result`` (a child's result or data). A child that asked a
        question is forwarded to the user. ``review=True`` holds the result for a reviewer."""
        return Emission(result, review)
