"""Authentication and reviewer credentials from ``create_app``'s arguments and ``Settings``.

An explicit argument wins over its environment variable (``create_app(api_keys=...)`` over
``LLAMON_API_KEYS``, ``jwt=`` over ``LLAMON_JWT_*``), like every other setting.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..settings import Settings
from .authenticator import Authenticator, Verifier
from .jwt_bearer import JWTSettings, JWTVerifier
from .keys import KeyTable
from .pairs import CredentialConfigError, check_pairs, parse_list

__all__ = ["DEFAULT_REVIEWER", "authenticator_of", "jwt_settings_of", "reviewers_of"]

#: the reviewer name of the single ``LLAMON_REVIEWER_TOKEN``
DEFAULT_REVIEWER = "reviewer"


def jwt_settings_of(settings: Settings) -> JWTSettings | None:
    url, issuer, audience = settings.jwt_jwks_url, settings.jwt_issuer, settings.jwt_audience
    if not url:
        if issuer or audience:
            raise CredentialConfigError(
                "LLAMON_JWT_ISSUER or LLAMON_JWT_AUDIENCE is set but LLAMON_JWT_JWKS_URL is "
                "not: JWT verification needs all three"
            )
        return None
    if not issuer or not audience:
        raise CredentialConfigError(
            "LLAMON_JWT_JWKS_URL is set: LLAMON_JWT_ISSUER and LLAMON_JWT_AUDIENCE are "
            "required too (a token for another service must not be accepted)"
        )
    try:
        return JWTSettings(jwks_url=url, issuer=issuer, audience=audience)
    except ValueError as exc:
        raise CredentialConfigError(str(exc)) from None


def authenticator_of(
    settings: Settings,
    *,
    api_keys: Mapping[str, str] | None = None,
    jwt: JWTSettings | None = None,
    verifier: Verifier | None = None,
) -> Authenticator | None:
    """The server's authentication; ``None`` when nothing is configured (every caller is then
    ``anonymous``)."""
    if api_keys is not None:
        keys = check_pairs(api_keys, "create_app(api_keys=...)")
    elif settings.api_keys:
        keys = parse_list(settings.api_keys, "LLAMON_API_KEYS")
    else:
        keys = {}
    jwt_settings = jwt if jwt is not None else jwt_settings_of(settings)
    if not keys and jwt_settings is None and verifier is None:
        return None
    return Authenticator(
        api_keys=KeyTable(keys) if keys else None,
        jwt=JWTVerifier(jwt_settings) if jwt_settings is not None else None,
        verifier=verifier,
    )


def reviewers_of(
    settings: Settings,
    *,
    reviewer_token: str | None = None,
    reviewer_tokens: Mapping[str, str] | None = None,
) -> KeyTable:
    """The reviewers of ``/reviews``: the single token (``LLAMON_REVIEWER_TOKEN``) as reviewer
    ``reviewer``, and the named ones (``LLAMON_REVIEWER_TOKENS``); empty turns them off."""
    what = "reviewer token"
    if reviewer_tokens is not None:
        named = check_pairs(reviewer_tokens, "create_app(reviewer_tokens=...)", what=what)
    elif settings.reviewer_tokens:
        named = parse_list(settings.reviewer_tokens, "LLAMON_REVIEWER_TOKENS", what=what)
    else:
        named = {}
    single = reviewer_token or settings.reviewer_token
    if single:
        both = {DEFAULT_REVIEWER: single, **named}
        if DEFAULT_REVIEWER in named:
            raise CredentialConfigError(
                f"reviewer {DEFAULT_REVIEWER!r} is configured twice: by LLAMON_REVIEWER_TOKEN "
                "(or reviewer_token) and among the named reviewers"
            )
        named = check_pairs(both, "the reviewer tokens", what=what)
    return KeyTable(named)
