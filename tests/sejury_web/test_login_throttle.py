"""Login throttling (issue 16 item 1): failed logins lock out a username and an address, with a
lockout page that says how long, a cool-off that doubles with each lockout of the day, and a
login that clears the count. Through the real login page and django-axes."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = settings.AXES_FAILURE_LIMIT


@pytest.fixture
def alice() -> User:
    return user_create(actor=None, username="alice", password=PASSWORD, roles=[Role.REVIEWER])


def attempt(username: str, password: str, address: str = "10.0.0.1") -> tuple[int, str, bool]:
    """A login from ``address``: the status, the page, and whether it logged in."""
    client = Client(REMOTE_ADDR=address)
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
    assert "for <strong>alice</strong>" in page
    assert "paused for 1 minute" in page
    assert 'href="/accounts/login/"' in page


def test_an_address_trying_many_usernames_is_locked_out_too(alice: User) -> None:
    for number in range(LIMIT):
        attempt(f"guess{number}", "wrong", address="10.0.0.9")
    status, _, logged_in = attempt("alice", PASSWORD, address="10.0.0.9")
    assert (status, logged_in) == (429, False)
    # Alice, from her own address, is not.
    assert attempt("alice", PASSWORD, address="10.0.0.2")[2]


def test_a_login_clears_the_failures(alice: User) -> None:
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong")
    assert attempt("alice", PASSWORD)[2]
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong")
    assert attempt("alice", PASSWORD)[2]


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
