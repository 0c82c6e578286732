"""``llamon-agent chat`` in a pseudo-terminal, against real server processes: our example server
(``app.main:AGENTS`` under ``llamon-agent serve``, with API keys) and an official a2a-sdk
0.3.26 server (``tests/chat/sdk_server.py`` under uvicorn).

``LLAMON_CHAT_TRANSCRIPT=FILE`` makes the document-review test write what the terminal showed
to FILE (docs/chat-transcript.txt was made so).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.chat.sdk_server import BIRTHDAY_QUESTION, DOC_QUESTION, PROGRESS, SLOW_REQUEST
from tests.chat.terminal import (
    PROMPT_ANSWER,
    PROMPT_DECISION,
    PROMPT_YOU,
    STEP_TIMEOUT,
    SdkServer,
    chat,
    sdk_server,
)
from tests.process.conftest import EXAMPLE_TARGET, Server, serving

KEY = "chat-test-key-1"
DOC = "? 어떤 서류를 검증할까요?"
BIRTHDAY = "? 생년월일을 알려주세요."
EMAIL = "Send an email to alice@example.com about Meeting: The meeting is at 10."


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("ours")
    with serving(EXAMPLE_TARGET, folder, api_keys={"tester": KEY}) as server:
        yield server


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    with sdk_server(tmp_path_factory.mktemp("sdk")) as server:
        yield server


def context_of(shown: str) -> str:
    found = re.findall(r"\(context (\S+): continue it later", shown)
    assert found, shown
    return found[-1]


def test_document_review_by_number_then_free_text(ours: Server, tmp_path: Path) -> None:
    with chat(ours.url, ["--api-key", KEY], tmp_path) as session:
        session.expect("This server has several agents:")
        session.expect("1) Document review [document-review]")
        session.answer("agent> ", "1")
        session.answer(PROMPT_YOU, "이 서류를 검증해줘")
        session.expect(DOC)
        session.expect("2) 주민등록증 (id_card)")
        session.answer(PROMPT_ANSWER, "5")
        session.expect("there is no choice 5: type 1 to 2, a label, or your own answer")
        session.answer(PROMPT_ANSWER, "1")
        session.expect(BIRTHDAY)
        session.answer(PROMPT_ANSWER, "1990-01-01")
        session.expect("Document review ready: passport, date of birth 1990-01-01.")
        session.expect("[completed]")
        assert session.quit() == 0
        shown = session.shown()
    order = [shown.index(s) for s in ("[submitted]", "[working]", "[input-required]", DOC,
                                      BIRTHDAY, '"doc_type": "passport"', "[completed]")]
    assert order == sorted(order), shown
    assert "\x1b" not in shown
    if transcript := os.environ.get("LLAMON_CHAT_TRANSCRIPT"):
        text = f"$ llamon-agent chat {ours.url} --api-key $KEY\n{shown}"
        Path(transcript).write_text(text.replace(ours.url, "http://127.0.0.1:8000"),
                                    encoding="utf-8")


def test_email_review_edited_as_json_then_approved(ours: Server, tmp_path: Path) -> None:
    with chat(ours.url, ["--agent", "email-assistant"], tmp_path,
              LLAMON_API_KEY=KEY) as session:
        session.answer(PROMPT_YOU, EMAIL)
        session.expect("! tool call 1 of 1: send_email")
        session.expect("Tool `send_email` is awaiting approval")
        session.expect('"to": "alice@example.com",')
        session.expect("decide: 1) approve  2) edit  3) reject")
        session.answer(PROMPT_DECISION, "respond no")
        session.expect("'respond' is not allowed here: type approve or edit or reject")
        session.answer(PROMPT_DECISION, 'edit {"to": "bob@example.com", ')
        session.expect("that is not JSON")
        session.answer(PROMPT_DECISION, 'edit {"to": "bob@example.com", "subject": "Meeting", '
                       '"body": "Moved to 11."}')
        session.expect('send_email will run with {"to": "bob@example.com"')
        session.answer("run it? (yes/no) ", "yes")
        session.expect("Sent an email to bob@example.com with subject 'Meeting'.")
        session.expect("[completed]")
        assert session.quit() == 0


def test_restarted_chat_continues_with_context(ours: Server, tmp_path: Path) -> None:
    """Remembered: ``tasks/get`` shows the waiting question. Not remembered (another state
    folder): the first line goes to the context, and our server answers what waits there."""
    contexts = []
    for _ in range(2):
        with chat(ours.url, ["--agent", "document-review", "--api-key", KEY],
                  tmp_path) as first:
            first.answer(PROMPT_YOU, "이 서류를 검증해줘")
            first.answer(PROMPT_ANSWER, "2")
            first.expect(BIRTHDAY)
            first.expect(PROMPT_ANSWER)
            contexts.append(context_of(first.shown()))
        # the block ends by killing the chat while the question waits

    with chat(ours.url, ["--agent", "document-review", "--api-key", KEY, "--context",
                         contexts[0]], tmp_path) as again:
        again.expect("[input-required] task ")
        again.expect(BIRTHDAY)
        again.answer(PROMPT_ANSWER, "2000-02-29")
        again.expect("Document review ready: id_card, date of birth 2000-02-29.")
        assert again.quit() == 0

    elsewhere = tmp_path / "other-state"
    with chat(ours.url, ["--agent", "document-review", "--api-key", KEY, "--context",
                         contexts[1]], elsewhere) as fresh:
        fresh.expect(f"nothing remembered for context {contexts[1]}")
        fresh.answer(PROMPT_YOU, "1985-05-05")
        fresh.expect("Document review ready: id_card, date of birth 1985-05-05.")
        assert fresh.quit() == 0


def test_a_wrong_key_is_shown_in_words(ours: Server, tmp_path: Path) -> None:
    with chat(ours.url, ["--agent", "document-review", "--api-key", "wrong-key"],
              tmp_path) as session:
        session.answer(PROMPT_YOU, "이 서류를 검증해줘")
        session.expect("error: the server refused the credentials (HTTP 401): give the right "
                       "key with --api-key or $LLAMON_API_KEY")
        session.expect(PROMPT_YOU)  # and the chat goes on
        assert session.quit() == 0
        assert "Traceback" not in session.shown()


def test_official_sdk_server_answered_on_its_task(sdk: SdkServer, tmp_path: Path) -> None:
    """The SDK starts a new task for a message without ``taskId``: reaching the end proves
    every answer named the task; the review step is reached again after a restart."""
    with chat(sdk.url, [], tmp_path) as first:
        first.expect("SDK document agent")
        first.answer(PROMPT_YOU, "check my document")
        first.expect(f"? {DOC_QUESTION}")
        first.expect("1) Passport (passport): the blue booklet")
        first.answer(PROMPT_ANSWER, "passport")
        first.expect(f"? {BIRTHDAY_QUESTION}")
        first.answer(PROMPT_ANSWER, "1990-01-01")
        first.expect(f"  ... {PROGRESS}")
        first.expect("! tool call 1 of 1: send_email")
        first.expect(PROMPT_DECISION)
        printed = first.log.getvalue()
        assert "pwned" not in printed and "\x1b[2J" not in printed and "evil" not in printed
        context = context_of(first.shown())
        assert "asking again" not in first.shown()  # every answer carried the interruptId

    with chat(sdk.url, ["--context", context], tmp_path) as again:
        again.expect("[input-required] task ")
        again.expect("! tool call 1 of 1: send_email")
        again.answer(PROMPT_DECISION, "approve")
        again.expect("Checked passport for 1990-01-01; send_email approve: to alice@example.com")
        again.expect("[completed]")
        assert again.quit() == 0


def test_ctrl_c_stops_a_reply_and_ctrl_d_leaves(sdk: SdkServer, tmp_path: Path) -> None:
    with chat(sdk.url, [], tmp_path) as session:
        session.answer(PROMPT_YOU, SLOW_REQUEST)
        session.expect("[working]")
        session.child.sendintr()
        session.expect("stopped following the reply")
        session.expect(PROMPT_YOU)  # the chat goes on
        session.child.sendeof()
        session.expect("bye")
        session.child.expect(pexpect.EOF, timeout=STEP_TIMEOUT)
        session.child.close()
        assert session.child.exitstatus == 0
        assert "Traceback" not in session.shown()
