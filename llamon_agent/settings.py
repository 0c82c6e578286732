"""``Settings``: every environment variable the package reads, read in one place.

The CLI and ``create_app`` call ``Settings.from_env()`` once and pass the values on explicitly;
nothing in the package writes ``os.environ``. Explicit arguments (``--db``, ``create_app(db=)``)
win over the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_DB", "Settings"]

DEFAULT_DB = "llamon.sqlite3"


@dataclass(frozen=True)
class Settings:
    """``db`` (``LLAMON_DB``): the SQLite file, or ``:memory:``; ``reviewer_token``
    (``LLAMON_REVIEWER_TOKEN``): the bearer token of the reviewer endpoints, none turns them
    off; ``language`` (``LLAMON_LANGUAGE``): the default language of reviewer-facing texts;
    ``public_url`` (``LLAMON_PUBLIC_URL``): the endpoint the agent card advertises; ``model``
    (``LLAMON_MODEL``, ``provider:model``): the example app's chat model, none runs offline."""

    db: str = DEFAULT_DB
    reviewer_token: str | None = None
    language: str | None = None
    public_url: str | None = None
    model: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            db=env.get("LLAMON_DB") or DEFAULT_DB,
            reviewer_token=env.get("LLAMON_REVIEWER_TOKEN") or None,
            language=env.get("LLAMON_LANGUAGE") or None,
            public_url=env.get("LLAMON_PUBLIC_URL") or None,
            model=env.get("LLAMON_MODEL") or None,
        )
