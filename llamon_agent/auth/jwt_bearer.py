"""JWT bearer tokens, verified with PyJWT against a JWKS URL (the optional extra ``jwt``:
``pip install 'llamon-agent[jwt]'``).

The principal is the token's ``sub``. A token is accepted only when its signature verifies with
a key of the JWKS (asymmetric algorithms only: a shared-secret ``HS256`` token could be forged
by anyone who knows a public key), its ``iss`` and ``aud`` are the configured ones, and its
``exp`` is in the future (``nbf`` and ``iat``, when present, are checked too).

PyJWT fetches the JWKS with blocking I/O, so verification runs in a worker thread. The key set
is cached for ``jwks_lifespan`` seconds and fetched again at most every
``jwks_cooldown`` seconds for a token naming an unknown key (a rotation), so tokens with made-up
key ids cannot make the server hammer the identity provider. Individual keys are deliberately
not cached beyond the set's lifespan: a key the provider withdraws stops verifying then.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..core.principal import ANONYMOUS, Principal

__all__ = ["DEFAULT_ALGORITHMS", "JWTSettings", "JWTVerifier"]

log = logging.getLogger(__name__)

#: asymmetric signature algorithms only (no HS*: a public key must never verify a token)
DEFAULT_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)
#: seconds between two warnings about an unreachable JWKS URL
_WARN_INTERVAL = 60.0


@dataclass(frozen=True)
class JWTSettings:
    """Where the signing keys are (``jwks_url``, ``LLAMON_JWT_JWKS_URL``) and what a token must
    say: ``issuer`` (``LLAMON_JWT_ISSUER``) and ``audience`` (``LLAMON_JWT_AUDIENCE``), both
    required. ``leeway``: seconds of clock skew allowed on ``exp``/``nbf``/``iat``."""

    jwks_url: str
    issuer: str
    audience: str
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway: float = 30.0
    jwks_lifespan: float = 300.0
    jwks_cooldown: float = 30.0
    jwks_timeout: float = 5.0

    def __post_init__(self) -> None:
        if not self.jwks_url.startswith(("https://", "http://")):
            raise ValueError("the JWKS URL (LLAMON_JWT_JWKS_URL) must be an http(s) URL")
        if not self.issuer:
            raise ValueError("JWT verification needs an issuer (LLAMON_JWT_ISSUER)")
        if not self.audience:
            raise ValueError("JWT verification needs an audience (LLAMON_JWT_AUDIENCE)")
        if not self.algorithms or any(a.upper().startswith("HS") or a == "none"
                                      for a in self.algorithms):
            raise ValueError("JWT algorithms must be asymmetric (RS*, PS*, ES*, EdDSA)")


def _pyjwt() -> Any:
    try:
        import jwt
    except ImportError:  # the optional extra is not installed
        raise ImportError(
            "JWT verification needs PyJWT: pip install 'llamon-agent[jwt]'"
        ) from None
    return jwt


class JWTVerifier:
    def __init__(self, settings: JWTSettings) -> None:
        self._jwt = _pyjwt()
        self.settings = settings
        self._client = self._jwt.PyJWKClient(
            settings.jwks_url, cache_jwk_set=True, lifespan=settings.jwks_lifespan,
            timeout=settings.jwks_timeout, cooldown_duration=settings.jwks_cooldown,
        )
        self._warned = -_WARN_INTERVAL

    async def warm(self) -> None:
        """Fetch the key set once at start, so a wrong URL shows in the log at once."""
        try:
            await asyncio.to_thread(self._client.get_signing_keys)
        except self._jwt.PyJWTError as exc:
            log.warning("cannot read the JWT signing keys from %s: %s (JWT bearer tokens are "
                        "refused until it answers)", self.settings.jwks_url, exc)

    async def verify(self, token: str) -> Principal | None:
        """The token's principal, or ``None`` for any token that does not verify."""
        if token.count(".") != 2:  # not a compact JWS: no need to reach for a thread
            return None
        try:
            claims = await asyncio.to_thread(self._decode, token)
        except self._jwt.PyJWKClientConnectionError as exc:
            self._warn_unreachable(exc)
            return None
        except self._jwt.PyJWTError:
            return None
        except ValueError:  # malformed key material or segments PyJWT does not wrap
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str) or subject == ANONYMOUS:
            return None
        try:
            return Principal(subject)
        except ValueError:
            return None

    def _decode(self, token: str) -> dict[str, Any]:
        key = self._client.get_signing_key_from_jwt(token)
        s = self.settings
        claims: dict[str, Any] = self._jwt.decode(
            token, key, algorithms=list(s.algorithms), audience=s.audience, issuer=s.issuer,
            leeway=s.leeway, options={"require": ["exp", "iss", "aud", "sub"]},
        )
        return claims

    def _warn_unreachable(self, exc: Exception) -> None:
        now = time.monotonic()
        if now - self._warned >= _WARN_INTERVAL:
            self._warned = now
            log.warning("cannot read the JWT signing keys from %s: %s", self.settings.jwks_url,
                        exc)
