"""The address a request came from, as login throttling and the API's limits count it.

Behind a reverse proxy every request comes from the proxy's address (``REMOTE_ADDR``); the
client's is in ``X-Forwarded-For``, which each proxy extends with the address it was called
from. Anyone can send that header, so it is read only when the direct peer is a proxy named
in ``SEJURY_TRUSTED_PROXIES`` (addresses or networks), and then from the right: the
right-most address that is not a trusted proxy is the client (what came before it was
written by the client, or by proxies nobody vouches for). Without trusted proxies, or from
any other peer, the header is ignored and the peer is the client.
"""

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

UNKNOWN = "0.0.0.0"  # noqa: S104 - a placeholder address, not a bind address


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """``SEJURY_TRUSTED_PROXIES``' entries as networks (an address is a network of one; the
    settings refuse an entry that is neither)."""
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _address(text: str) -> Address | None:
    """An address as proxies write it: bare, or with a port (``1.2.3.4:80``, ``[::1]:80``)."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def client_address(request: HttpRequest) -> str:
    """The client's address: the peer's, or through trusted proxies the right-most
    untrusted one in ``X-Forwarded-For`` (see the module's docstring)."""
    peer = _address(str(request.META.get("REMOTE_ADDR") or ""))
    if peer is None:
        return UNKNOWN
    networks = _networks(tuple(settings.SEJURY_TRUSTED_PROXIES))
    if not any(peer in network for network in networks):
        return str(peer)
    # Several X-Forwarded-For headers arrive joined by commas, in order.
    hops = str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")
    client = peer
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            # A trusted proxy passed on something that is no address: the last address
            # known to be true is that proxy's.
            break
        client = address
        if not any(address in network for network in networks):
            break
    return str(client)
