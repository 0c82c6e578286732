"""The caller of a request, as authentication left it in the ASGI scope."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from ..core.principal import ANONYMOUS_PRINCIPAL, Principal

__all__ = ["PRINCIPAL_SCOPE_KEY", "principal_of", "with_principal"]

#: the ASGI scope key the authentication middleware sets (``server/auth_middleware.py``)
PRINCIPAL_SCOPE_KEY = "llamon.principal"


def principal_of(scope: Mapping[str, Any]) -> Principal:
    """The authenticated principal; ``anonymous`` when the server has no authentication."""
    found = scope.get(PRINCIPAL_SCOPE_KEY)
    return found if isinstance(found, Principal) else ANONYMOUS_PRINCIPAL


def with_principal(scope: MutableMapping[str, Any], principal: Principal) -> None:
    scope[PRINCIPAL_SCOPE_KEY] = principal
