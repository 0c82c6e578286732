"""Shared secrets matched to names in constant time: API keys and reviewer tokens."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

__all__ = ["KeyTable"]


class KeyTable:
    """``name -> secret``. ``match`` compares the given value with every secret, whatever it
    finds, so the time it takes tells nothing about which secret (or how much of one) matched."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self._entries = [(name, secret.encode()) for name, secret in secrets.items()]

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._entries]

    def match(self, given: str) -> str | None:
        """The name whose secret is ``given``, or ``None``."""
        try:
            candidate = given.encode("ascii")
        except UnicodeEncodeError:  # secrets are ASCII; still compare, so the time is the same
            candidate = b"\x00"
        found: str | None = None
        for name, secret in self._entries:
            if hmac.compare_digest(candidate, secret) and found is None:
                found = name
        return found
