"""How the server's log lines look: ``text`` for a person, ``json`` (one object a line) for a
log pipeline. ``configure_logging`` sets up the whole process once, uvicorn's lines included.

A line may carry structured fields: ``log.info("request", extra=fields(method=..., ...))``.
``json`` puts them beside ``time``, ``level``, ``logger`` and ``message``; ``text`` appends them
as ``key=value`` (all but ``event``, which the message already says), quoting any value with a
space, a quote, ``=`` or a control character, so a client's id can neither split a line nor
forge another field. Nothing here adds request or message contents: the fields are chosen by
the code that logs.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, Literal, TextIO

import orjson

__all__ = [
    "LOG_FORMATS",
    "LogFormat",
    "configure_logging",
    "fields",
    "log_level",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")
#: the key of ``LogRecord.__dict__`` that holds a line's fields (``extra=fields(...)``)
_FIELDS = "llamon_fields"
#: uvicorn's extra level, below DEBUG
_TRACE = 5
_LEVELS = {"trace": _TRACE, "debug": logging.DEBUG, "info": logging.INFO,
           "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL}
#: libraries whose INFO lines would repeat every outgoing call (a remote child's URL, ...)
_CHATTY = ("httpx", "httpcore")


def fields(**values: Any) -> dict[str, Any]:
    """``extra=`` for a line with structured fields."""
    return {_FIELDS: values}


def log_level(name: str) -> int:
    """``--log-level``'s names (uvicorn's, ``trace`` included) as a ``logging`` level."""
    try:
        return _LEVELS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown log level {name!r}: one of {', '.join(_LEVELS)}") from None


def _time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fields_of(record: logging.LogRecord) -> dict[str, Any]:
    found = record.__dict__.get(_FIELDS)
    return found if isinstance(found, dict) else {}


class JSONFormatter(logging.Formatter):
    """One JSON object per line; a traceback is the string ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _fields_of(record).items():
            line.setdefault(key, value)  # never overwrite the four keys above
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str).decode()


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    if text and all(ch.isprintable() and ch not in ' "=' for ch in text):
        return text
    return orjson.dumps(text).decode()  # quoted, with every control character escaped


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message> key=value ...``."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_time(record), record.levelname, f"{record.name}:", record.getMessage()]
        parts += [f"{key}={_text_value(value)}" for key, value in _fields_of(record).items()
                  if key != "event"]  # the message says it (for a JSON pipeline to filter on)
        text = " ".join(parts)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            text += "\n" + self.formatStack(record.stack_info)
        return text


class _Handler(logging.StreamHandler[TextIO]):
    """The one handler ``configure_logging`` installs (recognised when it runs again)."""


def configure_logging(
    log_format: str, level: str, stream: TextIO | None = None, *, force: bool = False
) -> bool:
    """Every line of the process through one handler on the root logger, at ``level``.

    Like ``logging.basicConfig``, it leaves a process whose logging is already configured
    (a handler on the root logger that is not this module's: a host application, pytest)
    alone unless ``force``; it returns whether it configured. uvicorn must then be started
    with ``log_config=None`` so that its loggers propagate to the root logger instead of
    getting handlers of their own (``server/serve.py`` does)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: one of {', '.join(LOG_FORMATS)}")
    number = log_level(level)
    root = logging.getLogger()
    if not force and any(not isinstance(h, _Handler) for h in root.handlers):
        return False
    logging.addLevelName(_TRACE, "TRACE")
    handler = _Handler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if log_format == "json" else TextFormatter())
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    for name in _CHATTY:  # their lines come back with debug logging
        logging.getLogger(name).setLevel(number if number <= logging.DEBUG else logging.WARNING)
    return True
