"""The pytest side of ``driver.py``: one driver process, commands in, typed replies out.

Synchronous on purpose: the driver outlives a test's event loop (one per module), and a reader
thread pairs replies with commands by ``cid``, so a command can be submitted, left running (a
stream waiting for a reviewer) and awaited later. Every wait is bounded: a hung client fails the
test with the driver's stderr instead of blocking CI.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

DRIVER = Path(__file__).resolve().with_name("driver.py")
DEFAULT_TIMEOUT = 30.0
GRACE = 10.0  # how much longer the test waits than the driver's own bound on a command
MAX_REPLY = 16 * 1024 * 1024


class DriverFailure(AssertionError):
    """The driver died, answered garbage or did not answer in time."""


@dataclass(frozen=True)
class RpcError:
    """An exception the 1.x client raised: its class, JSON-RPC code when known, message."""

    type: str
    code: int | None
    message: str
    data: Any = None


@dataclass(frozen=True)
class Exchange:
    """One HTTP request the client made and the response it got, as on the wire."""

    method: str
    url: str
    headers: dict[str, str]
    request: Any
    status: int
    content_type: str
    response: Any
    strict_errors: list[str] = field(default_factory=list)

    @property
    def rpc_method(self) -> str | None:
        return self.request.get("method") if isinstance(self.request, dict) else None

    @property
    def results(self) -> list[Any]:
        """The JSON-RPC ``result`` of each response body or SSE frame (errors left out)."""
        bodies = ([frame["data"] for frame in self.response]
                  if isinstance(self.response, list) else [self.response])
        return [body["result"] for body in bodies if isinstance(body, dict) and "result" in body]

    @property
    def errors(self) -> list[Any]:
        bodies = ([frame["data"] for frame in self.response]
                  if isinstance(self.response, list) else [self.response])
        return [body["error"] for body in bodies if isinstance(body, dict) and "error" in body]


@dataclass(frozen=True)
class Reply:
    result: Any
    error: RpcError | None
    events: list[dict[str, Any]] = field(default_factory=list)
    wire: list[Exchange] = field(default_factory=list)

    def ok(self) -> Any:
        """The result; an error reply fails the test with everything the driver saw."""
        if self.error is not None:
            raise AssertionError(f"the 1.x client raised {self.error}\nwire: {self.wire}")
        return self.result

    @property
    def rpc(self) -> list[Exchange]:
        """The JSON-RPC exchanges (the card fetch left out)."""
        return [e for e in self.wire if e.rpc_method is not None]


def _reply(raw: dict[str, Any]) -> Reply:
    error = raw.get("error")
    return Reply(
        result=raw.get("result"),
        error=RpcError(error["type"], error.get("code"), error["message"], error.get("data"))
        if error else None,
        events=list(raw.get("events") or []),
        wire=[
            Exchange(w["method"], w["url"], w["headers"], w["request"], w["status"],
                     w["contentType"], w["response"], list(w.get("strictErrors") or []))
            for w in raw.get("wire") or []
        ],
    )


class Driver:
    """One ``driver.py`` process run by the 1.x SDK's python."""

    def __init__(self, python: Path, stderr_path: Path) -> None:
        self._stderr: IO[bytes] = stderr_path.open("wb")
        self._stderr_path = stderr_path
        self._proc = subprocess.Popen(
            # -I: no PYTHONPATH, no user site, not even the script's folder: only the 1.x SDK
            [str(python), "-I", str(DRIVER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            cwd=stderr_path.parent,
        )
        self._ids = itertools.count(1)
        self._replies: dict[int, dict[str, Any]] = {}
        self._garbage: list[str] = []
        self._done = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="sdk1-driver", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in iter(lambda: self._proc.stdout.readline(MAX_REPLY), b""):  # type: ignore[union-attr]
            try:
                raw = json.loads(line)
                cid = int(raw["cid"])
            except (ValueError, KeyError, TypeError):
                raw, cid = None, -1
            with self._done:
                if raw is None:
                    self._garbage.append(line.decode("utf-8", errors="replace")[:2000])
                else:
                    self._replies[cid] = raw
                self._done.notify_all()
        with self._done:  # the driver exited: wake every waiter
            self._done.notify_all()

    def log(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")[-8000:]

    def submit(self, op: str, *, timeout: float = DEFAULT_TIMEOUT, **fields: Any) -> int:
        """Start a command; ``wait`` for its reply."""
        if self._proc.poll() is not None:
            raise DriverFailure(f"the driver exited {self._proc.returncode}:\n{self.log()}")
        cid = next(self._ids)
        line = json.dumps({"cid": cid, "op": op, "timeout": timeout, **fields}) + "\n"
        assert self._proc.stdin is not None
        self._proc.stdin.write(line.encode())
        self._proc.stdin.flush()
        return cid

    def wait(self, cid: int, timeout: float = DEFAULT_TIMEOUT + GRACE) -> Reply:
        deadline = time.monotonic() + timeout
        with self._done:
            while cid not in self._replies:
                left = deadline - time.monotonic()
                if self._garbage:
                    raise DriverFailure(f"driver wrote non-protocol output: {self._garbage}")
                if self._proc.poll() is not None and not self._reader.is_alive():
                    raise DriverFailure(f"the driver exited {self._proc.returncode}:\n"
                                        f"{self.log()}")
                if left <= 0:
                    raise DriverFailure(f"no reply to command {cid} within {timeout}s:\n"
                                        f"{self.log()}")
                self._done.wait(min(left, 1.0))
            return _reply(self._replies.pop(cid))

    def call(self, op: str, *, timeout: float = DEFAULT_TIMEOUT, **fields: Any) -> Reply:
        return self.wait(self.submit(op, timeout=timeout, **fields), timeout + GRACE)

    def stop(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self._proc.stdin.close()  # EOF: the driver closes its clients and exits
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._reader.join(timeout=5)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()
