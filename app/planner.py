"""A small deterministic chat model that plans emails, so the assistant works with no key.

Grammar (case does not matter; ``[x]`` is optional, ``a | b`` either)::

    request    = [please | can you | could you | tolong] verb [a | an | the]
                 [email | mail | message | note | pesan] [to | ke | kepada]
                 recipients [,] topic-word subject [separator body]
    verb       = send | write | mail | email | e-mail | shoot | drop | kirim | kirimkan
    recipients = recipient {("," | "and" | "&" | "dan") recipient} [an email | a message]
    recipient  = an email address | a contact name (looked up with search_contacts first)
    topic-word = about | regarding | re | re: | concerning | titled | subject | subject:
                 | with subject | with the subject | tentang | soal | perihal | mengenai
    separator  = ":" | saying | that says | body | body: | with body | with the body
                 | and say | isi | isinya | bilang | " - "

Without a body the body is the subject. Examples::

    Send an email to alice@example.com about Meeting: The meeting is at 10.
    Email Alice about Lunch saying See you at noon.
    please write to bob@example.com and Citra regarding Budget, body: Numbers attached.
    Send Bob an email re Offsite
    kirim email ke alice@example.com tentang Rapat: Rapat jam 10.

How it answers, one step per call:

1. after the user's request: one ``search_contacts(query=name)`` per name and one
   ``send_email(to, subject, body)`` per address, in the order the recipients were written;
2. after the look-ups: one ``send_email`` per name that was found;
3. then a reply saying what actually ran, from the calls as they stand in history (an edited
   call shows the arguments that ran) and their results: ``Sent an email to X with subject
   'S'.`` or ``Did not send an email to X: <the tool result>``.

A message it cannot read gets a short reply with an example, and no tool call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["HELP", "EmailPlanner", "EmailRequest", "parse_request"]

HELP = (
    "I can send emails for you. Try: 'Send an email to alice@example.com about Meeting: "
    "The meeting is at 10.' or 'Email Alice about Lunch saying See you at noon.'"
)

_REQUEST = re.compile(
    r"""^\s*(?:(?:please|pls|can\s+you|could\s+you|would\s+you|tolong)\s+)*
    (?:send|write|mail|e-?mail|shoot|drop|kirim(?:kan)?)
    (?:\s+(?:an?|the|one))?
    (?:\s+(?:e-?mail|mail|message|note|pesan|surel))?
    (?:\s+(?:to|ke|kepada))?
    \s+(?P<recipients>.+?)\s*,?
    \s+(?:about|regarding|re:?|concerning|titled|subject:?|with\s+(?:the\s+)?subject:?
        |tentang|soal|perihal|mengenai)
    \s+(?P<rest>.+?)\s*$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
_SEPARATOR = re.compile(
    r"""\s*:\s+|,?\s+(?:saying|that\s+says|body|with\s+(?:the\s+)?body|and\s+say|isi(?:nya)?
        |bilang):?\s+|\s+-{1,2}\s+""",
    re.IGNORECASE | re.VERBOSE,
)
_SPLIT = re.compile(r"\s*(?:,|&|\band\b|\bdan\b)\s*", re.IGNORECASE)
_TRAILING_NOUN = re.compile(r"\s+(?:an?\s+)?(?:e-?mail|mail|message|note)$", re.IGNORECASE)
_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_NAME = re.compile(r"^[^\W\d_][\w .'-]*$")
_FOUND = re.compile(r"<([^<>\s]+@[^<>\s]+)>")


@dataclass(frozen=True)
class EmailRequest:
    recipients: tuple[str, ...]  # addresses and names, as written
    subject: str
    body: str


def parse_request(text: str) -> EmailRequest | None:
    """The request in ``text``, or ``None`` when it does not follow the grammar."""
    match = _REQUEST.match(text)
    if match is None:
        return None
    listed = _TRAILING_NOUN.sub("", match["recipients"].strip())
    recipients = tuple(r.strip().strip("'\"") for r in _SPLIT.split(listed) if r.strip())
    if not recipients or not all(_ADDRESS.match(r) or _NAME.match(r) for r in recipients):
        return None
    rest = match["rest"].strip()
    separator = _SEPARATOR.search(rest)
    if separator is not None:
        subject, body = rest[: separator.start()], rest[separator.end():]
    else:
        subject, body = rest, ""
    subject = subject.strip().strip("'\"").rstrip(".,;!").strip()
    body = body.strip() or subject
    if not subject:
        return None
    return EmailRequest(recipients, subject, body)


class EmailPlanner(BaseChatModel):
    """The offline planner (see the module docstring); ``bind_tools`` keeps it as it is."""

    @property
    def _llm_type(self) -> str:
        return "llamon-email-planner"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> EmailPlanner:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=plan(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop)


def plan(messages: list[BaseMessage]) -> AIMessage:
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    if start < 0:
        return AIMessage(content=HELP)
    request = parse_request(messages[start].text)
    if request is None:
        return AIMessage(content=HELP)
    since = messages[start + 1:]
    steps = [m for m in since if isinstance(m, AIMessage)]
    results = {m.tool_call_id: m for m in since if isinstance(m, ToolMessage)}
    numbered = _Ids(messages)
    if not steps:
        calls = [
            numbered.call("send_email", {"to": r, "subject": request.subject, "body": request.body})
            if _ADDRESS.match(r)
            else numbered.call("search_contacts", {"query": r})
            for r in request.recipients
        ]
        return AIMessage(content="", tool_calls=calls)
    if len(steps) == 1 and any(c["name"] == "search_contacts" for c in steps[0].tool_calls):
        found = [
            _address(results.get(str(c["id"])))
            for c in steps[0].tool_calls
            if c["name"] == "search_contacts"
        ]
        sends = [
            numbered.call("send_email", {"to": a, "subject": request.subject, "body": request.body})
            for a in found
            if a is not None
        ]
        if sends:
            return AIMessage(content="", tool_calls=sends)
    return AIMessage(content=_report(steps, results))


class _Ids:
    """Tool call ids unique in the thread: ``call_1``, ``call_2``, ..."""

    def __init__(self, messages: list[BaseMessage]) -> None:
        self._next = 1 + sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))

    def call(self, name: str, args: dict[str, Any]) -> ToolCall:
        call = ToolCall(name=name, args=args, id=f"call_{self._next}", type="tool_call")
        self._next += 1
        return call


def _address(result: ToolMessage | None) -> str | None:
    if result is None or result.status == "error":
        return None
    found = _FOUND.search(result.text)
    return found.group(1) if found else None


def _report(steps: list[AIMessage], results: dict[str, ToolMessage]) -> str:
    lines: list[str] = []
    for step in steps:
        for call in step.tool_calls:
            result = results.get(str(call["id"]))
            outcome = result.text if result is not None else "no result"
            args = call["args"]
            if call["name"] == "send_email":
                ran = result is not None and result.status != "error" and outcome.startswith("Email #")
                if ran:
                    lines.append(
                        f"Sent an email to {args.get('to')} with subject '{args.get('subject')}'."
                    )
                else:
                    lines.append(f"Did not send an email to {args.get('to')}: {outcome}")
            elif call["name"] == "search_contacts":
                if _address(result) is None:
                    lines.append(f"Could not find '{args.get('query')}': {outcome}")
            else:
                lines.append(f"{call['name']}: {outcome}")
    return "\n".join(lines) or "Nothing was sent."
