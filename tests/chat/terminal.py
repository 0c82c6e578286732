"""Real processes for the pseudo-terminal tests: the servers, and ``llamon-agent chat`` in a pty.

``Chat`` wraps a ``pexpect`` child running ``python -m llamon_agent.cli chat URL ...``; every
``expect`` is bounded by ``STEP_TIMEOUT``, and what the terminal showed is kept (``shown``)
without escape sequences or carriage returns, for assertions and the docs transcript.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pexpect

from llamon_agent.chat.sanitize import clean
from tests.process.conftest import CARD_PATH, REPO_ROOT, _free_port, child_env

STEP_TIMEOUT = 10.0
START_TIMEOUT = 20.0
PROMPT_YOU = "you> "
PROMPT_ANSWER = "answer> "
PROMPT_DECISION = "decision> "


@dataclass
class Chat:
    child: pexpect.spawn
    log: io.StringIO

    def expect(self, text: str, timeout: float = STEP_TIMEOUT) -> None:
        try:
            self.child.expect_exact(text, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise AssertionError(f"the chat did not show {text!r}; it showed:\n"
                                 f"{self.shown()}") from exc

    def answer(self, prompt: str, line: str) -> None:
        self.expect(prompt)
        self.child.sendline(line)

    def shown(self) -> str:
        return clean(self.log.getvalue()).replace("\r", "")

    def quit(self) -> int:
        self.child.sendline("/quit")
        self.child.expect(pexpect.EOF, timeout=STEP_TIMEOUT)
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def chat_env(state_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in child_env().items()
           if k not in ("EDITOR", "VISUAL", "LLAMON_API_KEY", "LLAMON_CHAT_AGENT",
                        "LLAMON_CHAT_CONTEXT")}
    env.update({"XDG_STATE_HOME": str(state_home), "TERM": "dumb", "LC_ALL": "C.UTF-8",
                "PYTHONIOENCODING": "utf-8", **extra})
    return env


def _sigint_default() -> None:
    # a pytest started in the background by a non-interactive shell ignores SIGINT, and the
    # chat would inherit that: Ctrl-C (the Ctrl-C test's) must reach it however pytest started
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def chat(url: str, args: Sequence[str], state_home: Path, **env: str) -> Iterator[Chat]:
    log = io.StringIO()
    child = pexpect.spawn(
        sys.executable, ["-m", "llamon_agent.cli", "chat", url, *args], cwd=str(REPO_ROOT),
        env=chat_env(state_home, **env), encoding="utf-8", timeout=STEP_TIMEOUT,
        dimensions=(50, 200), preexec_fn=_sigint_default,
    )
    child.logfile_read = log
    session = Chat(child, log)
    try:
        yield session
    finally:
        session.close()


@dataclass
class SdkServer:
    url: str
    proc: subprocess.Popen[bytes]


@contextmanager
def sdk_server(log_dir: Path) -> Iterator[SdkServer]:
    """``tests.chat.sdk_server:app`` under uvicorn on a free port, until the block ends."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log_path = log_dir / f"sdk-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "tests.chat.sdk_server:app", "--host",
             "127.0.0.1", "--port", str(port), "--log-level", "warning"],
            cwd=REPO_ROOT, env={**child_env(), "CHAT_SDK_URL": url}, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        try:
            _wait_for_card(url, proc, log_path)
            yield SdkServer(url, proc)
        finally:
            proc.kill()
            proc.wait(timeout=10)


def _wait_for_card(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    with httpx.Client(trust_env=False, timeout=1.0) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the SDK server exited:\n{log_path.read_text()}")
            try:
                if http.get(url.rstrip("/") + CARD_PATH).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"the SDK server did not answer within {START_TIMEOUT}s:\n"
                       f"{log_path.read_text()}")


__all__ = ["PROMPT_ANSWER", "PROMPT_DECISION", "PROMPT_YOU", "Chat", "SdkServer", "chat",
           "chat_env", "sdk_server"]
