"""Which storage a database setting names (``--db``, ``LLAMON_DATABASE_URL``, ``create_app(db=)``).

* ``sqlite:///PATH`` or a plain ``PATH``: a SQLite file (``sqlite:///app.db`` is relative,
  ``sqlite:////srv/app.db`` absolute, as SQLAlchemy spells them);
* ``:memory:`` or ``memory://``: process-local storage that ends with the process;
* ``postgresql://...`` or ``postgres://...``: a PostgreSQL database (libpq's URL, passed to
  psycopg as it is).

Any other ``scheme://`` is refused with the forms above: a typo must not become a SQLite file
named after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DatabaseURL", "parse_database_url"]

MEMORY = ":memory:"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_FORMS = "sqlite:///PATH, a file path, :memory:, memory:// or postgresql://USER@HOST/DATABASE"


@dataclass(frozen=True)
class DatabaseURL:
    """``kind`` says which storage; ``target`` is what it opens: the SQLite path,
    ``:memory:``, or the PostgreSQL URL as given."""

    kind: Literal["memory", "sqlite", "postgres"]
    target: str

    @property
    def shown(self) -> str:
        """The setting as logs may show it: a PostgreSQL password is masked."""
        if self.kind != "postgres":
            return self.target
        parts = urlsplit(self.target)
        if parts.password is None:
            return self.target
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def parse_database_url(value: str) -> DatabaseURL:
    """Raises ``ValueError`` naming the accepted forms for anything else."""
    if not value or not value.strip():
        raise ValueError(f"the database setting is empty: use {_FORMS}")
    if value in (MEMORY, "memory://"):
        return DatabaseURL("memory", MEMORY)
    match = _SCHEME.match(value)
    if match is None:
        return DatabaseURL("sqlite", value)
    scheme = match.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return DatabaseURL("postgres", value)
    if scheme == "sqlite":
        rest = value[len(match.group(0)):]
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"a SQLite URL is sqlite:///PATH (three slashes), got {value!r}")
        path = rest[1:]
        return DatabaseURL("memory", MEMORY) if path == MEMORY else DatabaseURL("sqlite", path)
    raise ValueError(f"unsupported database URL scheme {scheme!r}: use {_FORMS}")
