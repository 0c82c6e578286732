"""Who may call: API keys, JWT bearer tokens, a verifier callback, and reviewer credentials.

Pure pieces (no HTTP framework): the server's middleware (``server/auth_middleware.py``) asks an
``Authenticator`` for the principal of each protected request, the agent card declares
``card_security``, the reviewer endpoints match tokens with a ``KeyTable``. docs/operations.md
("Authentication") is the operator's side.
"""

from .authenticator import API_KEY_HEADER, Authenticator, Verifier, bearer_of
from .config import DEFAULT_REVIEWER, authenticator_of, jwt_settings_of, reviewers_of
from .jwt_bearer import DEFAULT_ALGORITHMS, JWTSettings, JWTVerifier
from .keys import KeyTable
from .pairs import CredentialConfigError, check_pairs, parse_file, parse_list
from .schemes import API_KEY_SCHEME, BEARER_SCHEME, card_security

__all__ = [
    "API_KEY_HEADER",
    "API_KEY_SCHEME",
    "BEARER_SCHEME",
    "DEFAULT_ALGORITHMS",
    "DEFAULT_REVIEWER",
    "Authenticator",
    "CredentialConfigError",
    "JWTSettings",
    "JWTVerifier",
    "KeyTable",
    "Verifier",
    "authenticator_of",
    "bearer_of",
    "card_security",
    "check_pairs",
    "jwt_settings_of",
    "parse_file",
    "parse_list",
    "reviewers_of",
]
