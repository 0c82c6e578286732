"""Helpers of the observability tests: the JSON log lines of the process, scraped metrics."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from llamon_agent.server.logs import configure_logging

from .series import Series, parse_metrics


class LogLines:
    """What ``configure_logging("json", "info")`` writes, one parsed object a line."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines()]

    def events(self, event: str) -> list[dict[str, Any]]:
        return [line for line in self.all() if line.get("event") == event]


@pytest.fixture
def log_lines() -> Iterator[LogLines]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    stream = io.StringIO()
    configure_logging("json", "info", stream, force=True)
    try:
        yield LogLines(stream)
    finally:  # the process's logging as it was: other tests share it
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        for name, old in chatty.items():
            logging.getLogger(name).setLevel(old)


async def scrape(http: httpx.AsyncClient, **headers: str) -> Series:
    response = await http.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse_metrics(response.text)


