"""Who is calling: one request's headers in, a ``Principal`` (or nothing) out.

Credentials are tried in a fixed order: ``X-API-Key`` and a bearer value against the API keys,
then the bearer value as a JWT, then the verifier callback. The first that names a principal
wins; none is a refusal. Nothing here logs a credential.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from ..core.principal import ANONYMOUS, Principal
from .jwt_bearer import JWTVerifier
from .keys import KeyTable

__all__ = ["API_KEY_HEADER", "Authenticator", "Verifier", "bearer_of"]

log = logging.getLogger(__name__)

#: ``create_app(auth=...)``: the request's headers (case-insensitive names) in, the caller's
#: principal out, or ``None`` to refuse. It runs on the event loop: do blocking work elsewhere.
Verifier = Callable[[Mapping[str, str]], Awaitable[Principal | None]]

API_KEY_HEADER = "X-API-Key"


def bearer_of(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (scheme case-insensitive), else ``None``."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class Authenticator:
    def __init__(
        self,
        *,
        api_keys: KeyTable | None = None,
        jwt: JWTVerifier | None = None,
        verifier: Verifier | None = None,
    ) -> None:
        if not (api_keys or jwt or verifier):
            raise ValueError("an Authenticator needs API keys, JWT settings or a verifier")
        self.api_keys = api_keys or None
        self.jwt = jwt
        self.verifier = verifier

    @property
    def mode(self) -> str:
        """How callers authenticate, for the start-up log (no secrets, no key counts beyond
        the number of principals)."""
        parts = []
        if self.api_keys:
            count = len(self.api_keys)
            parts.append(f"API keys ({count} principal{'' if count == 1 else 's'})")
        if self.jwt:
            parts.append(f"JWT bearer tokens (issuer {self.jwt.settings.issuer})")
        if self.verifier:
            parts.append("a verifier callback")
        return ", ".join(parts)

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` value of a refusal."""
        value = 'Bearer realm="llamon"'
        if self.api_keys:
            value += f', ApiKey header="{API_KEY_HEADER}"'
        return value

    async def start(self) -> None:
        if self.jwt is not None:
            await self.jwt.warm()

    async def authenticate(self, headers: Mapping[str, str]) -> Principal | None:
        bearer = bearer_of(headers.get("authorization"))
        if self.api_keys:
            for given in (headers.get(API_KEY_HEADER.lower()), bearer):
                if given and (name := self.api_keys.match(given.strip())) is not None:
                    return Principal(name)
        if self.jwt is not None and bearer:
            principal = await self.jwt.verify(bearer)
            if principal is not None:
                return principal
        if self.verifier is not None:
            return await self._call_verifier(headers)
        return None

    async def _call_verifier(self, headers: Mapping[str, str]) -> Principal | None:
        assert self.verifier is not None
        try:
            found = await self.verifier(headers)
        except Exception:
            # Fail closed, and tell the operator (the traceback is the verifier's, not a header)
            log.exception("the authentication verifier raised; the request is refused")
            return None
        if found is None:
            return None
        if not isinstance(found, Principal) or found.name == ANONYMOUS:
            log.error("the authentication verifier returned %s, not a Principal other than "
                      "%r; the request is refused", type(found).__name__, ANONYMOUS)
            return None
        return found
