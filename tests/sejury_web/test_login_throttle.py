"""Login throttling (issue 16 item 1, issue 27 item 4): failed logins lock out a username at an
address, a username guessed from many addresses, and an address guessing many usernames, each
past its own limit; one client's failures do not lock out other users at its address; behind a
trusted proxy the address is the client's. A lockout page says which count and how long, the
cool-off doubles with each lockout of the day, and a login clears the count. Through the real
login page and django-axes."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = settings.AXES_FAILURE_LIMIT
PROXY = "10.1.0.1"


@pytest.fixture
def alice() -> User:
    return user_create(actor=None, username="alice", password=PASSWORD, roles=[Role.REVIEWER])


def attempt(
    username: str, password: str, address: str = "10.0.0.1", forwarded_for: str = ""
) -> tuple[int, str, bool]:
    """A login from ``address`` (through a proxy with ``forwarded_for``): the status, the
    page, and whether it logged in."""
    extra = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    client = Client(REMOTE_ADDR=address, **extra)
    response = client.post(reverse("login"), {"username": username, "password": password})
    return response.status_code, response.content.decode(), "_auth_user_id" in client.session


def test_after_the_limit_even_the_right_password_is_refused_with_the_wait(alice: User) -> None:
    for _ in range(LIMIT - 1):
        status, page, logged_in = attempt("alice", "wrong")
        assert (status, logged_in) == (200, False)
        assert "didn't match" in page or "didn’t match" in page
    status, page, _ = attempt("alice", "wrong")
    assert status == 429
    status, page, logged_in = attempt("alice", PASSWORD)
    assert (status, logged_in) == (429, False)
    assert "Too many failed logins" in page
    assert f"There were {LIMIT} failed logins" in page
    assert "for <strong>alice</strong> from this address" in page
    assert "paused for 1 minute" in page
    assert 'href="/accounts/login/"' in page
    # Someone else failing as alice from their address does not lock her out of hers.
    assert attempt("alice", PASSWORD, address="10.0.0.2")[2]


def test_other_users_at_the_address_are_not_locked_out(alice: User) -> None:
    """One client failing (as itself, or guessing a few usernames) at a shared address."""
    for number in range(LIMIT):
        attempt("bob", "wrong", address="10.0.0.9")
        attempt(f"guess{number}", "wrong", address="10.0.0.9")
    assert attempt("bob", "wrong", address="10.0.0.9")[0] == 429
    assert attempt("alice", PASSWORD, address="10.0.0.9")[2]


def test_an_address_past_its_much_higher_ceiling_is_locked_out(
    alice: User, settings: Settings
) -> None:
    assert settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT >= 10 * LIMIT
    settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT = 8
    for number in range(8):
        attempt(f"guess{number}", "wrong", address="10.0.0.9")
    status, page, logged_in = attempt("alice", PASSWORD, address="10.0.0.9")
    assert (status, logged_in) == (429, False)
    assert "There were 8 failed logins" in page
    assert "from this address, for any user" in page
    # Alice, from her own address, is not.
    assert attempt("alice", PASSWORD, address="10.0.0.2")[2]


def test_a_username_guessed_from_many_addresses_is_locked_out_everywhere(
    alice: User, settings: Settings
) -> None:
    assert settings.SEJURY_LOGIN_USERNAME_FAILURE_LIMIT > LIMIT
    settings.SEJURY_LOGIN_USERNAME_FAILURE_LIMIT = 6
    for number in range(6):
        attempt("alice", "wrong", address=f"10.0.1.{number}")
    status, page, logged_in = attempt("alice", PASSWORD, address="10.0.0.2")
    assert (status, logged_in) == (429, False)
    assert "for <strong>alice</strong>, from any address" in page


def test_behind_a_trusted_proxy_each_client_is_counted_apart(
    alice: User, settings: Settings
) -> None:
    settings.SEJURY_TRUSTED_PROXIES = ["10.1.0.0/16"]
    settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT
    for number in range(LIMIT):
        attempt(f"guess{number}", "wrong", address=PROXY, forwarded_for="203.0.113.5")
    assert attempt("alice", PASSWORD, address=PROXY, forwarded_for="203.0.113.5")[0] == 429
    # Another client through the same proxy (its own address added by a second proxy).
    assert attempt("alice", PASSWORD, address=PROXY, forwarded_for="198.51.100.7, 10.1.0.2")[2]
    assert AccessAttempt.objects.filter(ip_address="203.0.113.5").count() == LIMIT


def test_a_forwarded_for_header_from_an_untrusted_peer_is_ignored(
    alice: User, settings: Settings
) -> None:
    settings.SEJURY_TRUSTED_PROXIES = ["10.1.0.0/16"]
    settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT
    for number in range(LIMIT):
        attempt(f"guess{number}", "wrong", address="203.0.113.9", forwarded_for=f"192.0.2.{number}")
    assert attempt("alice", PASSWORD, address="203.0.113.9", forwarded_for="192.0.2.200")[0] == 429


def test_a_login_clears_the_failures(alice: User) -> None:
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong")
    assert attempt("alice", PASSWORD)[2]
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong")
    assert attempt("alice", PASSWORD)[2]


def test_a_login_does_not_clear_the_address_count_of_others(
    alice: User, settings: Settings
) -> None:
    settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT + 1
    for number in range(LIMIT):
        attempt(f"guess{number}", "wrong", address="10.0.0.9")
    assert attempt("alice", PASSWORD, address="10.0.0.9")[2]
    attempt("guess-again", "wrong", address="10.0.0.9")
    assert attempt("alice", PASSWORD, address="10.0.0.9")[0] == 429


def test_each_lockout_of_the_day_doubles_the_wait(alice: User) -> None:
    for lockout, wait in ((1, "1 minute"), (2, "2 minutes"), (3, "4 minutes")):
        for _ in range(LIMIT):
            attempt("alice", "wrong")
        status, page, _ = attempt("alice", PASSWORD)
        assert status == 429, lockout
        assert f"paused for {wait}" in page, lockout
        # The cool-off passes: axes forgets the attempts, its log remembers the lockout.
        AccessAttempt.objects.all().delete()
    assert AccessFailureLog.objects.filter(locked_out=True).exists()
    # A day later the wait starts again at a minute.
    old = AccessFailureLog.objects.all()
    for row in old:
        row.attempt_time -= timedelta(days=1, minutes=1)
        row.save()
    for _ in range(LIMIT):
        attempt("alice", "wrong")
    assert "paused for 1 minute" in attempt("alice", PASSWORD)[1]


def test_failures_of_others_at_a_shared_address_do_not_lengthen_a_lockout(alice: User) -> None:
    for number in range(4 * LIMIT):
        attempt(f"user{number}", "wrong", address="10.0.0.9")
    for _ in range(LIMIT):
        attempt("alice", "wrong", address="10.0.0.9")
    assert "paused for 1 minute" in attempt("alice", PASSWORD, address="10.0.0.9")[1]
