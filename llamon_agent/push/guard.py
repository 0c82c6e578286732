"""Which webhooks the server may call (SSRF): checked when a config is set, and again before
every attempt, since a name may resolve elsewhere later (docs/operations.md, "Push
notifications").

A webhook is refused when its URL is not ``http``/``https`` with a host (no credentials in it),
when it names the server itself (the address a request arrived on, the public URL), or when
any address its host resolves to is not a public unicast address: loopback, private (RFC 1918,
unique local, shared, documentation ...) and link-local ones unless private targets are allowed,
multicast, unspecified and reserved ones always. IPv4 embedded in IPv6 (mapped, NAT64
``64:ff9b::/96``, 6to4) is judged as the IPv4 address. A host written as a number in any form
``inet_aton`` reads (``127.1``, ``2130706433``, ``0x7f.1``) is that address, as the operating
system's resolver would read it.

A delivery connects to the very address this check accepted (``Destination.address``); the
``Host`` header and TLS (SNI, certificate) keep the name.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Destination", "Origin", "Resolve", "WebhookRefused", "check_webhook",
           "parse_webhook", "system_resolve"]

#: ``(host, port)`` -> the addresses it resolves to
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC = re.compile(r"[0-9a-fx.]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


async def system_resolve(host: str, port: int) -> Sequence[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class WebhookRefused(Exception):
    """``why`` is short and fixed (``data.reason`` says ``webhook refused: <why>``);
    ``detail`` says which address or what in the URL."""

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(f"{why} ({detail})" if detail else why)
        self.why = why
        self.detail = detail


@dataclass(frozen=True)
class Origin:
    """A host and port that are the server itself."""

    host: str
    port: int


@dataclass(frozen=True)
class Webhook:
    """A webhook URL taken apart: ``host`` lower case, ASCII, without a final dot."""

    scheme: str
    host: str
    port: int
    #: the path and query, as sent on the request line
    target: str
    #: ``host`` as an address, when the URL names one
    literal: IPAddress | None

    def host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port == _DEFAULT_PORTS[self.scheme] else f"{shown}:{self.port}"


@dataclass(frozen=True)
class Destination:
    """A checked webhook and the address to connect to."""

    webhook: Webhook
    address: str

    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.webhook.scheme}://{host}:{self.webhook.port}{self.webhook.target}"


def parse_webhook(url: str) -> Webhook:
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise WebhookRefused("invalid URL", "whitespace or a control character")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise WebhookRefused("invalid URL", str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise WebhookRefused("scheme not http or https", repr(parts.scheme))
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused("credentials in the URL", "use authentication instead")
    raw = parts.hostname
    if not raw:
        raise WebhookRefused("no host")
    try:
        port = parts.port
    except ValueError:
        raise WebhookRefused("invalid port") from None
    if port == 0:
        raise WebhookRefused("invalid port", "0")
    host, literal = _host(raw)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Webhook(scheme, host, port or _DEFAULT_PORTS[scheme], target, literal)


def _host(raw: str) -> tuple[str, IPAddress | None]:
    try:
        address = ipaddress.ip_address(raw)
        return str(address), address
    except ValueError:
        pass
    host = raw.rstrip(".")
    if _NUMERIC.fullmatch(host):  # what the resolver would read as an IPv4 address
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
            return str(address), address
        except OSError:
            pass
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise WebhookRefused("invalid host", raw) from None
    if not host or len(host) > 253 or not all(_LABEL.fullmatch(p) for p in host.split(".")):
        raise WebhookRefused("invalid host", raw)
    return host, None


def refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why the server must not connect to ``address``, or ``None``."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return refusal(embedded, allow_private=allow_private)
    if address.is_unspecified:
        return "unspecified address"
    if address.is_multicast:
        return "multicast address"
    if address.is_loopback:
        return None if allow_private else "loopback address"
    if address.is_link_local:
        return None if allow_private else "link-local address"
    if address.is_global:
        return None
    if address.is_reserved:
        return "reserved address"
    return None if allow_private else "private address"


async def check_webhook(
    url: str, *, allow_private: bool, resolve: Resolve, resolve_timeout: float,
    own: Collection[Origin] = (),
) -> Destination:
    """The address to deliver ``url`` to; ``WebhookRefused`` when it must not be called."""
    webhook = parse_webhook(url)
    if Origin(webhook.host, webhook.port) in own:
        raise WebhookRefused("this server", webhook.host_header())
    if webhook.literal is not None:
        addresses: list[IPAddress] = [webhook.literal]
    else:
        try:
            async with asyncio.timeout(resolve_timeout):
                found = await resolve(webhook.host, webhook.port)
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        except (OSError, ValueError, TimeoutError) as exc:
            raise WebhookRefused("host does not resolve", f"{webhook.host}: {exc}") from None
        if not addresses:
            raise WebhookRefused("host does not resolve", webhook.host)
    for address in addresses:  # every one: the one connected to must not be chosen by DNS
        if Origin(str(address), webhook.port) in own:
            raise WebhookRefused("this server", f"{address}")
        why = refusal(address, allow_private=allow_private)
        if why is not None:
            raise WebhookRefused(why, str(address))
    return Destination(webhook, str(addresses[0]))
