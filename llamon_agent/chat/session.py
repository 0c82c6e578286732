"""The chat loop: read a line, send it, follow the reply, ask what the agent asks.

Synchronous at the top, so ``input()`` keeps the main thread (readline, and Ctrl-C as
``KeyboardInterrupt``); each request runs to its end on one event loop through ``run``
(``asyncio.Runner.run``), which turns Ctrl-C during a stream into the stream's cancellation
and a ``KeyboardInterrupt`` here: the stream stops, the chat goes on.

Every answer is built by :func:`~llamon_agent.client.answer_message`: it carries the task's
``taskId`` (servers that do not resume by ``contextId``, like the official SDK's, need it) and
the question's ``interruptId`` (a llamon server then never takes it for the next question).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from ..a2a.types import Message, Task
from ..client import (
    A2AClient,
    A2AClientError,
    EventStream,
    Question,
    answer_message,
    question_of,
    user_message,
)
from ..client.errors import A2AStreamInterruptedError
from .agents import ListedAgent
from .prompt import (
    MAX_EDIT_CHARS,
    MAX_LINE_CHARS,
    Decision,
    EditWanted,
    InputError,
    Picked,
    is_quit,
    read_agent_choice,
    read_answer,
    read_decision,
    read_edited_args,
)
from .render import (
    TurnRenderer,
    action_lines,
    agent_list_lines,
    card_lines,
    error_lines,
    question_lines,
    task_lines,
)
from .review import ReviewAction, review_actions
from .sanitize import clean
from .state import StateFileError, TaskMemory
from .terminal import EditorError, Terminal

__all__ = ["ChatOptions", "ChatSession", "RunAsync"]

T = TypeVar("T")


class RunAsync(Protocol):
    def __call__(self, coroutine: Coroutine[Any, Any, T], /) -> T: ...


@dataclass(frozen=True, slots=True)
class ChatOptions:
    server: str
    """The URL the chat was given: remembered tasks are kept per server."""
    context_id: str | None = None
    agents: tuple[ListedAgent, ...] = ()
    """What the server lists at ``GET /`` (asked for only without an agent id)."""


class _Quit:
    """The user left (``/quit``, Ctrl-D)."""


QUIT = _Quit()
_Step = Question | None | _Quit


class ChatSession:
    def __init__(
        self,
        client: A2AClient,
        terminal: Terminal,
        memory: TaskMemory,
        run: RunAsync,
        options: ChatOptions,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.terminal = terminal
        self.memory = memory
        self.run_async = run
        self.options = options
        self.context_id = options.context_id
        self.now = now
        self._remembered: tuple[str, str] | None = None
        self._memory_failed = False

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        """Talk until the user leaves; the exit code (0)."""
        card = self.client.card
        if card is not None:
            self.terminal.show(card_lines(card, self.client.url))
        if not self._choose_agent():
            return 0
        self.terminal.show(["Type a message. /quit or Ctrl-D leaves; Ctrl-C stops a reply."])
        pending: Question | None = None
        if self.context_id:
            try:
                pending = self._resume()
            except KeyboardInterrupt:
                self.terminal.show(["", "stopped looking up the context's task"])
        while True:
            try:
                step = self._step(pending)
            except KeyboardInterrupt:  # at a prompt: a new prompt, not the end
                self.terminal.show(["", "(type /quit or press Ctrl-D to leave)"])
                continue
            if isinstance(step, _Quit):
                self.terminal.show(["", "bye"])
                return 0
            pending = step

    def _step(self, pending: Question | None) -> _Step:
        if pending is None:
            return self._talk()
        if pending.is_review and review_actions(pending):
            return self._review(pending)
        return self._answer(pending)

    def _read(self, prompt: str) -> str | None:
        line = self.terminal.read_line(prompt)
        return None if line is None or is_quit(line) else line

    # ------------------------------------------------------------------ agent and context

    def _choose_agent(self) -> bool:
        agents = self.options.agents
        if self.client.agent_id or len(agents) < 2:
            return True
        self.terminal.show(agent_list_lines(list(agents)))
        while True:
            try:
                line = self._read("agent> ")
            except KeyboardInterrupt:
                self.terminal.show(["", "(type /quit or press Ctrl-D to leave)"])
                continue
            if line is None:
                self.terminal.show(["", "bye"])
                return False
            picked = read_agent_choice(line, agents)
            if isinstance(picked, InputError):
                self.terminal.show([f"  {picked.message}"])
                continue
            self.client.agent_id = picked
            self.terminal.show([f"talking to {clean(picked)}"])
            return True

    def _resume(self) -> Question | None:
        """``--context``: the task remembered for it, as it stands (its question, if any)."""
        context_id = self.context_id or ""
        try:
            task_id = self.memory.last_task(self.options.server, context_id)
        except StateFileError as exc:
            self.terminal.show([f"note: {clean(str(exc))}; going on without it"])
            task_id = None
        if task_id is None:
            self.terminal.show([f"nothing remembered for context {clean(context_id)}: your "
                                "first message goes to that context (a llamon server gives "
                                "it to the question waiting there)"])
            return None
        try:
            task = self.run_async(self.client.get_task(task_id))
        except A2AClientError as exc:
            self.terminal.show([*error_lines(exc), f"your first message goes to context "
                                f"{clean(context_id)}"])
            return None
        self.terminal.show(task_lines(task))
        question = question_of(task)
        if question is not None:
            self._show_question(question)
            return question
        if task.status.state in ("submitted", "working"):
            return self._turn(lambda: self.client.resubscribe(task.id), None, task.status.state)
        return None

    # ------------------------------------------------------------------ what the user types

    def _talk(self) -> _Step:
        line = self._read("you> ")
        if line is None:
            return QUIT
        text = line.strip()
        if not text:
            return None
        if len(text) > MAX_LINE_CHARS:
            self.terminal.show([f"  that line is too long: at most {MAX_LINE_CHARS} characters"])
            return None
        message = user_message(text, context_id=self.context_id)
        return self._send(message, None)

    def _answer(self, question: Question) -> _Step:
        line = self._read("answer> ")
        if line is None:
            return QUIT
        parsed = read_answer(line, question)
        if isinstance(parsed, InputError):
            self.terminal.show([f"  {parsed.message}"])
            return question
        if isinstance(parsed, Picked):
            if isinstance(parsed.value, list):
                message = answer_message(question, value=parsed.value)
            else:
                message = answer_message(question, choice=parsed.value)
        else:
            message = answer_message(question, text=parsed.text)
        return self._send(message, question)

    def _review(self, question: Question) -> _Step:
        actions = review_actions(question)
        decisions: list[dict[str, Any]] = []
        for index, action in enumerate(actions):
            self.terminal.show(action_lines(question, index, action, self.now()))
            decided = self._decide(action)
            if decided is None:
                return QUIT
            decisions.append(decided.body)
        return self._send(answer_message(question, decisions=decisions), question)

    def _decide(self, action: ReviewAction) -> Decision | None:
        """A decision the action allows; ``None`` when the user left."""
        while True:
            line = self._read("decision> ")
            if line is None:
                return None
            parsed = read_decision(line, action)
            if isinstance(parsed, EditWanted):
                edited = self._edit(action)
                if edited is None:
                    return None
                parsed = edited
            if isinstance(parsed, InputError):
                self.terminal.show([f"  {parsed.message}"])
                continue
            if parsed.body["type"] == "edit" and not self._confirm_edit(action, parsed):
                continue
            return parsed

    def _edit(self, action: ReviewAction) -> Decision | InputError | None:
        current = json.dumps(action.args, ensure_ascii=False, indent=2)
        if self.terminal.can_edit():
            try:
                text = self.terminal.edit(current + "\n", MAX_EDIT_CHARS)
            except EditorError as exc:
                return InputError(str(exc))
        else:
            self.terminal.show(["  type the new arguments as one JSON object on one line"
                                " (set $EDITOR to edit them in your editor)"])
            line = self._read("arguments> ")
            if line is None:
                return None
            text = line
        return read_edited_args(text.strip(), action)

    def _confirm_edit(self, action: ReviewAction, decision: Decision) -> bool:
        edited = decision.body["edited_action"]["args"]
        shown = clean(json.dumps(edited, ensure_ascii=False))
        self.terminal.show([f"  {clean(action.name)} will run with {shown}"])
        while True:
            line = self._read("run it? (yes/no) ")
            if line is None:
                return False
            answer = line.strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                self.terminal.show(["  not sent: decide again"])
                return False
            self.terminal.show(["  type yes or no"])

    # ------------------------------------------------------------------ talking to the server

    def _send(self, message: Message, question: Question | None) -> Question | None:
        if self.client.card is not None and not self.client.card.streaming:
            return self._whole_reply(message, question)
        return self._turn(lambda: self.client.stream(message), question)

    def _whole_reply(self, message: Message, question: Question | None) -> Question | None:
        renderer = TurnRenderer()
        try:
            result = self.run_async(self.client.send(message))
        except A2AClientError as exc:
            self.terminal.show(error_lines(exc))
            return question
        except KeyboardInterrupt:
            self.terminal.show(["", "stopped waiting for the reply"])
            return None
        self.terminal.show(renderer.whole(result))
        return self._after(result if isinstance(result, Task) else None)

    def _turn(self, open_stream: Callable[[], EventStream], question: Question | None,
              state: str | None = None) -> Question | None:
        """Follow one stream to its end. On an error the question stays pending (the user can
        try again); after Ctrl-C nothing is known to be pending."""
        renderer = TurnRenderer(state)
        try:
            task = self.run_async(self._follow(open_stream, renderer))
        except KeyboardInterrupt:
            self.terminal.show(["", "stopped following the reply (the task goes on at the "
                                "server; send a message or restart with --context)"])
            return None
        except A2AClientError as exc:
            self.terminal.show(error_lines(exc))
            return question
        return self._after(task)

    async def _follow(self, open_stream: Callable[[], EventStream],
                      renderer: TurnRenderer) -> Task | None:
        stream = open_stream()
        try:
            await self._show_events(stream, renderer)
        except A2AStreamInterruptedError as exc:
            if exc.task_id is None:
                raise
            self.terminal.show(["the stream broke; following the task again"])
            stream = self.client.resubscribe(exc.task_id, exc.last_event_id)
            await self._show_events(stream, renderer)
        return stream.task

    async def _show_events(self, stream: EventStream, renderer: TurnRenderer) -> None:
        async with stream:
            async for event in stream:
                if event.context_id:
                    self._in_context(event.context_id)
                if event.task_id and event.context_id:
                    self._remember(event.context_id, event.task_id)
                self.terminal.show(renderer.event(event.result))

    def _after(self, task: Task | None) -> Question | None:
        if task is None:
            return None
        self._in_context(task.context_id)
        self._remember(task.context_id, task.id)
        question = question_of(task)
        if question is not None:
            self._show_question(question)
        return question

    def _show_question(self, question: Question) -> None:
        if question.is_review and review_actions(question):
            self.terminal.show([f"? {clean(question.text)}"] if question.text else [])
        else:
            self.terminal.show(question_lines(question, self.now()))

    def _in_context(self, context_id: str) -> None:
        if self.context_id != context_id:
            self.context_id = context_id
            self.terminal.show([f"(context {clean(context_id)}: continue it later with "
                                f"--context {clean(context_id)})"])

    def _remember(self, context_id: str, task_id: str) -> None:
        if self._remembered == (context_id, task_id):
            return
        self._remembered = (context_id, task_id)
        try:
            self.memory.remember(self.options.server, context_id, task_id)
        except StateFileError as exc:
            if not self._memory_failed:  # said once; the chat works without it
                self._memory_failed = True
                self.terminal.show([f"note: {clean(str(exc))}; --context after a restart may "
                                    "not find this task"])
