"""``name=secret`` pairs: API keys (``LLAMON_API_KEYS``, ``--api-keys FILE``) and named reviewer
tokens (``LLAMON_REVIEWER_TOKENS``).

The environment holds comma-separated pairs, a file one pair per line (``#`` comments and blank
lines allowed). A bad entry is a startup error that names its source and its place (entry or
line number) and never the secret: configuration errors end up in logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.principal import ANONYMOUS, Principal, has_control_characters

__all__ = ["CredentialConfigError", "check_pairs", "parse_file", "parse_list"]


class CredentialConfigError(ValueError):
    """A credential entry that cannot be used; the message names where it is, not the secret."""


def parse_list(text: str, source: str, *, what: str = "API key") -> dict[str, str]:
    """Comma-separated ``name=secret`` pairs (an environment variable); empty entries are
    skipped, so a trailing comma is harmless."""
    entries = [(f"entry {n}", raw) for n, raw in enumerate(text.split(","), 1) if raw.strip()]
    return _checked((_split(place, raw, source, what) for place, raw in entries), source, what)


def parse_file(text: str, source: str, *, what: str = "API key") -> dict[str, str]:
    """One ``name=secret`` pair per line; ``#`` starts a comment line."""
    lines = [
        (f"line {n}", raw) for n, raw in enumerate(text.splitlines(), 1)
        if raw.strip() and not raw.lstrip().startswith("#")
    ]
    return _checked((_split(place, raw, source, what) for place, raw in lines), source, what)


def check_pairs(pairs: Mapping[str, str], source: str, *, what: str = "API key") -> dict[str, str]:
    """The same checks for pairs given in Python (``create_app(api_keys=...)``)."""
    return _checked(((f"name {name!r}", name, secret) for name, secret in pairs.items()),
                    source, what)


def _split(place: str, raw: str, source: str, what: str) -> tuple[str, str, str]:
    name, sep, secret = raw.partition("=")
    if not sep:
        noun = what.split()[-1]
        raise CredentialConfigError(f"{source}, {place}: expected name={noun}, with '='")
    return place, name.strip(), secret.strip()


def _checked(entries: Iterable[tuple[str, str, str]], source: str, what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    owners: dict[str, str] = {}
    for place, name, secret in entries:
        where = f"{source}, {place}"
        if not isinstance(name, str) or not isinstance(secret, str):
            raise CredentialConfigError(f"{where}: names and {what}s are strings")
        if not name:
            raise CredentialConfigError(f"{where}: the name before '=' is empty")
        try:
            Principal(name)
        except ValueError as exc:
            raise CredentialConfigError(f"{where}: {exc}") from None
        if name == ANONYMOUS:
            raise CredentialConfigError(
                f"{where}: {ANONYMOUS!r} is reserved for the callers of a server without "
                "authentication; choose another name"
            )
        if not secret:
            raise CredentialConfigError(f"{where}: the {what} of {name!r} is empty")
        if any(ch.isspace() for ch in secret) or has_control_characters(secret):
            raise CredentialConfigError(
                f"{where}: the {what} of {name!r} has a space or a control character"
            )
        if not secret.isascii():
            # header values arrive as bytes: a non-ASCII key could never match what a client sends
            raise CredentialConfigError(f"{where}: the {what} of {name!r} is not ASCII")
        if name in found:
            raise CredentialConfigError(f"{where}: {name!r} is configured twice")
        if secret in owners:
            raise CredentialConfigError(
                f"{where}: {name!r} has the same {what} as {owners[secret]!r}; each needs its own"
            )
        found[name], owners[secret] = secret, name
    return found
