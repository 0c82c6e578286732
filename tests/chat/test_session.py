"""``ChatSession`` driven by a scripted terminal against our server in process: what the pty
tests cannot reach quickly (a server refusing an edit, ``$EDITOR``, a broken state file)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.assistant import email_assistant
from app.main import AGENTS
from llamon_agent import Agent
from llamon_agent.chat.agents import ListedAgent
from llamon_agent.chat.session import ChatOptions, ChatSession
from llamon_agent.chat.state import TaskMemory
from llamon_agent.chat.terminal import EditorError
from llamon_agent.client import A2AClient
from tests.conftest import serve

SERVER = "http://testserver"
EMAIL = "Send an email to alice@example.com about Meeting: The meeting is at 10."
ONLY_ALICE = {"type": "object", "required": ["to", "subject", "body"],
              "properties": {"to": {"const": "alice@example.com"}}}
Ctrl_C = KeyboardInterrupt


class ScriptedTerminal:
    """Lines to type (``None``: Ctrl-D, ``Ctrl_C``: a KeyboardInterrupt at the prompt)."""

    def __init__(self, script: Sequence[str | type[KeyboardInterrupt] | None],
                 editor: str | EditorError | None = None) -> None:
        self.script = list(script)
        self.editor = editor
        self.prompts: list[str] = []
        self.shown: list[str] = []
        self.edited: list[str] = []

    def read_line(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        item = self.script.pop(0) if self.script else None
        if item is Ctrl_C:
            raise KeyboardInterrupt
        assert not isinstance(item, type)
        return item

    def show(self, lines: Sequence[str]) -> None:
        self.shown.extend(lines)

    def can_edit(self) -> bool:
        return self.editor is not None

    def edit(self, text: str, limit: int) -> str:
        self.edited.append(text)
        if isinstance(self.editor, EditorError):
            raise self.editor
        assert self.editor is not None
        return self.editor


def talk(agents: list[Agent], agent_id: str | None, terminal: ScriptedTerminal,
         memory: TaskMemory, context_id: str | None = None, *, streaming: bool = True,
         listed: tuple[ListedAgent, ...] = ()) -> int:
    with asyncio.Runner() as runner:
        server = serve(agents)
        raw: Any = runner.run(server.__aenter__())
        try:
            client = runner.run(A2AClient.connect(SERVER, http=raw.http, agent_id=agent_id))
            if not streaming:  # as a server whose card says it cannot stream
                assert client.card is not None
                client.card.capabilities.streaming = False
            options = ChatOptions(server=SERVER, context_id=context_id, agents=listed)
            return ChatSession(client, terminal, memory, runner.run, options).run()
        finally:
            runner.run(server.__aexit__(None, None, None))


def test_an_edit_the_server_refuses_is_shown_and_decided_again(tmp_path: Path) -> None:
    agent = email_assistant(interrupt_on={"send_email": {"args_schema": ONLY_ALICE}})
    terminal = ScriptedTerminal([
        EMAIL,
        'edit {"to": "eve@example.com", "subject": "Meeting", "body": "Hi"}', "yes",
        "approve",
    ])
    assert talk([agent], "email-assistant", terminal, TaskMemory(tmp_path / "s.json")) == 0
    refused = [line for line in terminal.shown if line.startswith("error:")]
    assert refused == [
        "error: the server refused this: 'edited_action.args' for 'send_email' does not match "
        "its schema at 'to': 'alice@example.com' was expected (JSON-RPC error -32602)"]
    assert terminal.shown.count("! tool call 1 of 1: send_email") == 2  # asked again
    assert "Sent an email to alice@example.com with subject 'Meeting'." in terminal.shown


def test_edit_in_the_editor(tmp_path: Path) -> None:
    terminal = ScriptedTerminal(
        [EMAIL, "edit", "yes"],
        editor='{"to": "bob@example.com", "subject": "Lunch", "body": "Noon"}\n')
    assert talk(list(AGENTS), "email-assistant", terminal, TaskMemory(tmp_path / "s.json")) == 0
    assert terminal.edited == ['{\n  "to": "alice@example.com",\n  "subject": "Meeting",\n'
                               '  "body": "The meeting is at 10."\n}\n']
    assert "Sent an email to bob@example.com with subject 'Lunch'." in terminal.shown


def test_an_editor_that_fails_is_said_and_the_decision_asked_again(tmp_path: Path) -> None:
    terminal = ScriptedTerminal([EMAIL, "edit", "reject not today"],
                                editor=EditorError("the editor exited with status 1"))
    assert talk(list(AGENTS), "email-assistant", terminal, TaskMemory(tmp_path / "s.json")) == 0
    assert "  the editor exited with status 1" in terminal.shown
    assert any(line.startswith("Did not send an email to alice@example.com")
               for line in terminal.shown), terminal.shown


def test_an_unreadable_state_file_is_said_and_the_chat_goes_on(tmp_path: Path) -> None:
    state = tmp_path / "chat.json"
    state.write_bytes(b"\x00garbage")
    terminal = ScriptedTerminal([Ctrl_C, "이 서류를 검증해줘", "1", "1990-01-01"])
    assert talk(list(AGENTS), "document-review", terminal, TaskMemory(state),
                context_id="ctx-1") == 0
    notes = [line for line in terminal.shown if line.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith(f"note: cannot read the chat state file {state}")
    assert notes[0].endswith("; going on without it")
    assert "nothing remembered for context ctx-1" in terminal.shown[terminal.shown.index(notes[0]) + 1]
    assert "(type /quit or press Ctrl-D to leave)" in terminal.shown
    assert "Document review ready: passport, date of birth 1990-01-01." in terminal.shown
    assert TaskMemory(state).last_task(SERVER, "ctx-1") is not None  # a good file again
    assert terminal.shown[-1] == "bye"


def test_a_server_that_cannot_stream_gets_message_send(tmp_path: Path) -> None:
    terminal = ScriptedTerminal(["이 서류를 검증해줘", "2", "1990-01-01"])
    assert talk(list(AGENTS), "document-review", terminal, TaskMemory(tmp_path / "s.json"),
                streaming=False) == 0
    assert terminal.shown[1].endswith("(no streaming: replies come whole)")
    start = terminal.shown.index("[completed]") - 2
    assert terminal.shown[start:start + 3] == [
        'data: {"doc_type": "id_card", "birthday": "1990-01-01"}',
        "Document review ready: id_card, date of birth 1990-01-01.",
        "[completed]",
    ]
    assert terminal.shown.count("? 생년월일을 알려주세요.") == 1


def test_picking_an_agent_survives_ctrl_c_and_a_wrong_number(tmp_path: Path) -> None:
    listed = (ListedAgent("document-review", "Document review", "asks twice"),
              ListedAgent("until-done", "Until done", ""))
    terminal = ScriptedTerminal([Ctrl_C, "3", "2", "take notes", "done"])
    assert talk(list(AGENTS), None, terminal, TaskMemory(tmp_path / "s.json"),
                listed=listed) == 0
    assert terminal.prompts[:3] == ["agent> ", "agent> ", "agent> "]
    assert terminal.shown[2:5] == ["This server has several agents:",
                                   "  1) Document review [document-review]: asks twice",
                                   "  2) Until done [until-done]"]
    assert "(type /quit or press Ctrl-D to leave)" in terminal.shown
    assert "  there is no agent 3: type 1 to 2, or an agent's id" in terminal.shown
    assert "talking to until-done" in terminal.shown
    assert "Done. No notes." in terminal.shown
