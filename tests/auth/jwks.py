"""A local identity provider for the JWT tests: RSA keys made here, their JWKS served over HTTP
on 127.0.0.1 by a real server in a thread, and tokens signed with them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://id.example.test/"
AUDIENCE = "llamon-tests"
KID = "test-key-1"


@cache
def new_key(name: str = "provider") -> rsa.RSAPrivateKey:
    """One RSA key per name for the whole run (making one takes a while)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class IdentityProvider:
    """``url`` serves ``{"keys": [...]}`` with the public half of ``key``; ``fetches`` counts
    the requests it answered (the verifier's cache and cooldown are visible there)."""

    key: rsa.RSAPrivateKey
    url: str = ""
    fetches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]}

    def count(self) -> None:
        with self._lock:
            self.fetches += 1

    def token(self, *, key: Any = None, algorithm: str = "RS256", kid: str | None = KID,
              headers: dict[str, Any] | None = None, **claims: Any) -> str:
        """A token for ``sub`` ``alice``, valid for a minute, unless ``claims`` say otherwise
        (a claim given as ``None`` is left out)."""
        now = int(time.time())
        body = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60,
                **claims}
        body = {k: v for k, v in body.items() if v is not None}
        head = dict(headers or {})
        if kid is not None:
            head["kid"] = kid
        return jwt.encode(body, key if key is not None else self.key, algorithm=algorithm,
                          headers=head)


@contextmanager
def identity_provider() -> Iterator[IdentityProvider]:
    provider = IdentityProvider(new_key())

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            provider.count()
            body = json.dumps(provider.jwks()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    provider.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
