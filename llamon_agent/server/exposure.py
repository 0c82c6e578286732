"""Secure by default: a server without authentication stays on loopback.

``llamon-agent serve`` asks ``check_exposure`` before it binds: without authentication, any
address but loopback (``0.0.0.0``, ``::``, a LAN address, a host name) is refused unless the
operator passes ``--allow-unauthenticated`` (something in front authenticates), and then every
start logs a warning. An app started by another ASGI server (``uvicorn app:app``) cannot know
its address: its lifespan logs a warning at every start when it has no authentication.

``create_app`` records its authentication in ``app.state.authentication`` (a description, or
``None``); an ASGI app that is not ``create_app``'s has none that the CLI can see.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

__all__ = ["authentication_of", "check_exposure", "is_loopback", "startup_warning"]

log = logging.getLogger(__name__)

_CHECKED = "exposure_checked"
_HOW = (
    "configure authentication (--api-keys FILE, LLAMON_API_KEYS, or LLAMON_JWT_JWKS_URL with "
    "LLAMON_JWT_ISSUER and LLAMON_JWT_AUDIENCE; docs/operations.md, Authentication)"
)


def is_loopback(host: str) -> bool:
    """Only literal loopback addresses and ``localhost``; any other name could resolve to an
    address others reach."""
    bare = host.strip()
    if bare.startswith("[") and bare.endswith("]"):
        bare = bare[1:-1]
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def authentication_of(app: Any) -> str | None:
    mode = getattr(getattr(app, "state", None), "authentication", None)
    return mode if isinstance(mode, str) and mode else None


def check_exposure(app: Any, host: str, *, allow_unauthenticated: bool) -> str | None:
    """The reason to refuse serving ``app`` on ``host``, or ``None`` (then it logs the warning
    an allowed unauthenticated server gets, and tells the app's lifespan it was checked)."""
    state = getattr(app, "state", None)
    if state is not None:
        setattr(state, _CHECKED, True)
    if authentication_of(app) is not None or is_loopback(host):
        return None
    if not allow_unauthenticated:
        seen = "" if state is not None and hasattr(state, "authentication") else (
            " (this ASGI app was not made by create_app: llamon-agent cannot see whether it "
            "authenticates)"
        )
        return (
            f"refusing to serve on {host} without authentication{seen}: anyone who can reach "
            f"that address could read, answer and cancel every task. Bind to 127.0.0.1, "
            f"{_HOW}, or pass --allow-unauthenticated when something in front of this server "
            "authenticates its callers"
        )
    log.warning(
        "serving on %s WITHOUT AUTHENTICATION (--allow-unauthenticated): every caller is the "
        "principal 'anonymous' and can read, answer and cancel every task; %s", host, _HOW,
    )
    return None


def startup_warning(app: Any) -> str | None:
    """What the lifespan of an app without authentication logs, unless the CLI checked."""
    state = getattr(app, "state", None)
    if authentication_of(app) is not None or getattr(state, _CHECKED, False):
        return None
    return (
        "no authentication is configured: every caller is the principal 'anonymous' and can "
        f"read, answer and cancel every task; serve it on loopback only, or {_HOW}"
    )
