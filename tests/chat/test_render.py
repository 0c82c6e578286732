"""Events, questions and reviews as the lines the terminal shows."""

from __future__ import annotations

from datetime import UTC, datetime

from llamon_agent.a2a.types import (
    Artifact,
    DataPart,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from llamon_agent.chat.render import (
    TurnRenderer,
    action_lines,
    error_lines,
    question_lines,
    time_left,
)
from llamon_agent.chat.review import review_actions
from llamon_agent.client.errors import (
    A2AAuthenticationError,
    A2AConnectionError,
    RemoteInvalidParamsError,
)
from tests.chat.questions import document_question, question, review

NOW = datetime(2026, 12, 1, 22, 30, 0, tzinfo=UTC)


def status(state: str, text: str | None = None, final: bool = False) -> TaskStatusUpdateEvent:
    message = None if text is None else Message(
        message_id="m", role="agent", parts=[TextPart(kind="text", text=text)])
    return TaskStatusUpdateEvent(task_id="t1", context_id="c1", final=final,
                                 status=TaskStatus(state=state, message=message))


def test_state_changes_progress_and_the_result() -> None:
    renderer = TurnRenderer()
    task = Task(id="t1", context_id="c1", status=TaskStatus(state="submitted"))
    lines = [
        *renderer.event(task),
        *renderer.event(status("working")),
        *renderer.event(status("working", "looking up contacts")),
        *renderer.event(TaskArtifactUpdateEvent(task_id="t1", context_id="c1", artifact=Artifact(
            artifact_id="a", name="result", parts=[
                DataPart(kind="data", data={"doc_type": "passport"}),
                TextPart(kind="text", text="Document review ready."),
            ]))),
        *renderer.event(status("completed", "Document review ready.", final=True)),
    ]
    assert lines == [
        "[submitted]",
        "[working]",
        "  ... looking up contacts",
        "data: {\"doc_type\": \"passport\"}",
        "Document review ready.",
        "[completed]",  # the status text repeats the artifact's: shown once
    ]


def test_a_failure_shows_its_message() -> None:
    renderer = TurnRenderer()
    assert renderer.event(status("failed", "the model timed out", final=True)) == [
        "[failed]", "the model timed out"]


def test_a_message_reply() -> None:
    reply = Message(message_id="m", role="agent", parts=[TextPart(kind="text", text="hello")])
    assert TurnRenderer().event(reply) == ["hello"]


def test_hostile_agent_text_is_stripped_of_control_sequences() -> None:
    renderer = TurnRenderer()
    lines = renderer.event(status("completed", "\x1b]0;owned\x07done\x1b[2J", final=True))
    assert lines == ["[completed]", "done"]


def test_a_question_with_numbered_choices() -> None:
    assert question_lines(document_question(), NOW) == [
        "? 어떤 서류를 검증할까요?",
        "  1) 여권 (passport)",
        "  2) 주민등록증 (id_card): Korean ID card",
        "  type a number, a label, or your own answer",
    ]


def test_a_re_asked_question_with_a_deadline() -> None:
    asked = question({"question": "생년월일을 알려주세요.",
                      "expires_at": "2026-12-01T22:34:05.000Z"}, reask=True)
    assert question_lines(asked, NOW) == [
        "? 생년월일을 알려주세요. (asked again: the answer was not clear)",
        "  time left: 4m 05s (until 2026-12-01T22:34:05.000Z)",
    ]


def test_time_left() -> None:
    assert time_left("2026-12-01T22:30:09Z", NOW) == "9s"
    assert time_left("2026-12-02T00:31:00.000Z", NOW) == "2h 01m"
    assert time_left("2026-12-01T22:29:00Z", NOW) == "expired"
    assert time_left("not a time", NOW) is None


def test_a_review_action_shows_name_description_arguments_and_allowed_decisions() -> None:
    pending = review({"to": "alice@example.com", "body": "\x1b[31mhi\x1b[0m"},
                     expires_at="2026-12-01T22:31:00.000Z")
    (action,) = review_actions(pending)
    assert action_lines(pending, 0, action, NOW) == [
        "! tool call 1 of 1: send_email",
        "  Tool `send_email` is awaiting approval",
        "  arguments:",
        '    {',
        '      "to": "alice@example.com",',
        # JSON shows a control character as an escape: the reviewer sees it, the terminal
        # does not run it
        '      "body": "\\u001b[31mhi\\u001b[0m"',
        '    }',
        "  time left: 1m 00s (until 2026-12-01T22:31:00.000Z)",
        "  decide: 1) approve  2) edit  3) reject",
        "  (edit alone opens the arguments for editing; edit {JSON} replaces them; "
        "reject MESSAGE gives the reason)",
    ]


def test_errors_in_words() -> None:
    refused = RemoteInvalidParamsError(-32602, "edited args do not match: 'to' is required",
                                       {"reason": "invalid decision"})
    assert error_lines(refused) == [
        "error: the server refused this: edited args do not match: 'to' is required "
        "(JSON-RPC error -32602, invalid decision)"]
    assert error_lines(A2AAuthenticationError(401, "http://x/", "unauthorized")) == [
        "error: the server refused the credentials (HTTP 401): give the right key with "
        "--api-key or $LLAMON_API_KEY"]
    assert error_lines(A2AConnectionError("connection failed: ConnectError()")) == [
        "error: connection failed: ConnectError()"]
