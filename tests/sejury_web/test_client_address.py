"""The client's address (issue 27 item 4): X-Forwarded-For is read only from a trusted proxy,
right-most untrusted address first."""

import pytest
from django.test import RequestFactory
from pytest_django.fixtures import Settings

from sejury_web.client_address import client_address


def address(peer: str, forwarded_for: str | None = None) -> str:
    extra = {} if forwarded_for is None else {"HTTP_X_FORWARDED_FOR": forwarded_for}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=peer, **extra))


@pytest.fixture
def proxies(settings: Settings) -> None:
    settings.SEJURY_TRUSTED_PROXIES = ["10.0.0.0/8", "192.0.2.1", "fd00::/8"]


def test_without_trusted_proxies_the_header_is_ignored(settings: Settings) -> None:
    settings.SEJURY_TRUSTED_PROXIES = []
    assert address("203.0.113.5", "198.51.100.7") == "203.0.113.5"


@pytest.mark.usefixtures("proxies")
@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        # An untrusted peer: its header says nothing.
        ("203.0.113.5", "198.51.100.7", "203.0.113.5"),
        # A trusted proxy: the address it was called from.
        ("10.0.0.1", "198.51.100.7", "198.51.100.7"),
        ("192.0.2.1", "198.51.100.7", "198.51.100.7"),
        # The client put a made-up address first: the right-most untrusted one counts.
        ("10.0.0.1", "1.2.3.4, 198.51.100.7", "198.51.100.7"),
        # Two trusted proxies.
        ("10.0.0.1", "1.2.3.4, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        # Ports and IPv6, as some proxies write them.
        ("10.0.0.1", "198.51.100.7:51234", "198.51.100.7"),
        ("fd00::1", "[2001:db8::5]:443", "2001:db8::5"),
        ("::ffff:10.0.0.1", "198.51.100.7", "198.51.100.7"),
        # No header, or only trusted hops: the last trusted hop.
        ("10.0.0.1", None, "10.0.0.1"),
        ("10.0.0.1", "10.0.0.7", "10.0.0.7"),
        # Something that is no address, passed on by a trusted proxy: that proxy.
        ("10.0.0.1", "unknown, 10.0.0.2", "10.0.0.2"),
        ("10.0.0.1", "198.51.100.7, unknown", "10.0.0.1"),
    ],
)
def test_through_trusted_proxies(peer: str, forwarded_for: str | None, client: str) -> None:
    assert address(peer, forwarded_for) == client
