"""An earlier release's SQLite schema, made from the current one: for the tests of what the
next open of such a file makes of it."""

from __future__ import annotations

import sqlite3


def as_an_older_release(path: str, *statements: str) -> None:
    """Run ``statements`` on the file at ``path`` (closed by its store) and commit them: the
    schema an earlier release left, for a test of what the next open makes of it."""
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()
