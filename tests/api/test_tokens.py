"""API tokens: the command, the page, hashing, revoking."""

import hashlib
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from api.models import ApiToken
from api.tokens import TOKEN_PREFIX
from sejury_web.models import AuditEvent
from tests.api.helpers import TokenClient, token_for
from tests.helpers import client_for

pytestmark = pytest.mark.django_db


def test_the_command_prints_the_token_alone_on_its_last_line(lead: User) -> None:
    out, err = StringIO(), StringIO()
    call_command("api_token", "--user", "lead", "--name", "nightly", stdout=out, stderr=err)
    token = out.getvalue().strip().splitlines()[-1]
    assert token.startswith(TOKEN_PREFIX)
    assert " " not in token
    assert len(token) > 40
    record = ApiToken.objects.get()
    assert (record.user, record.name) == (lead, "nightly")
    assert TokenClient(token).get("/api/v1/datasets").status_code == 200


def test_the_command_refuses_an_unknown_user(db: None) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user is called 'nobody'"):
        call_command("api_token", "--user", "nobody", stdout=StringIO(), stderr=StringIO())


def test_tokens_are_stored_hashed_never_as_they_are(lead: User) -> None:
    token = token_for(lead)
    record = ApiToken.objects.get()
    assert record.digest == hashlib.sha256(token.encode()).hexdigest()
    assert token.startswith(record.prefix)
    assert len(record.prefix) < len(token) // 3
    stored = [str(v) for v in ApiToken.objects.values_list().get()]
    assert not any(token in value for value in stored)
    events = " ".join(str(e.detail) + e.target_repr for e in AuditEvent.objects.all())
    assert token not in events


def test_a_revoked_token_is_refused(lead: User) -> None:
    token = token_for(lead)
    client = client_for(lead)
    record = ApiToken.objects.get()
    assert TokenClient(token).get("/api/v1/datasets").status_code == 200
    response = client.post(reverse("api:token_revoke", args=[record.pk]))
    assert response.status_code == 302
    answer = TokenClient(token).get("/api/v1/datasets")
    assert answer.status_code == 401
    assert answer.json() == {"detail": "this token is unknown or revoked"}
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_a_user_creates_sees_and_revokes_their_token_on_the_page(reviewer: User) -> None:
    client = client_for(reviewer)
    page = client.get(reverse("api:tokens"))
    assert page.status_code == 200
    assert "You have no token." in page.content.decode()
    made = client.post(reverse("api:tokens"), {"name": "laptop"})
    html = made.content.decode()
    record = ApiToken.objects.get()
    token = html.split('id="new-token-value">')[1].split("<")[0]
    assert token.startswith(record.prefix)
    assert hashlib.sha256(token.encode()).hexdigest() == record.digest
    assert made["Cache-Control"] == "no-store"
    # Shown once: the list afterwards names it by name and prefix only.
    listed = client.get(reverse("api:tokens")).content.decode()
    assert token not in listed
    assert record.prefix in listed
    assert "laptop" in listed
    assert "never" in listed  # not used yet
    client.post(reverse("api:token_revoke", args=[record.pk]))
    record.refresh_from_db()
    assert record.revoked_at is not None
    assert "revoked" in client.get(reverse("api:tokens")).content.decode()
    events = AuditEvent.objects.filter(action__startswith="api_token").order_by("pk")
    actions = list(events.values_list("action", "actor__username"))
    assert actions == [("api_token.create", "reviewer"), ("api_token.revoke", "reviewer")]


def test_an_annotator_has_no_tokens_page_since_the_api_serves_no_annotator(
    annotator: User, lead: User
) -> None:
    client = client_for(annotator)
    page = client.get(reverse("api:tokens"))
    assert page.status_code == 403
    assert "Not for your role" in page.content.decode()
    assert client.post(reverse("api:tokens"), {"name": "laptop"}).status_code == 403
    assert not ApiToken.objects.exists()
    # The link is in the lead's top bar, not the annotator's.
    home = client.get(reverse("judging:my_labels")).content.decode()
    assert reverse("api:tokens") not in home
    assert reverse("api:tokens") in client_for(lead).get(reverse("api:tokens")).content.decode()


@pytest.mark.parametrize("name", ["", "   "])
def test_a_token_without_a_name_is_refused_with_a_word_on_the_field(lead: User, name: str) -> None:
    answer = client_for(lead).post(reverse("api:tokens"), {"name": name})
    assert answer.status_code == 400
    assert "Name the token: say what will use it." in answer.content.decode()
    assert 'id="new-token-value"' not in answer.content.decode()
    assert not ApiToken.objects.exists()


def test_nobody_revokes_another_users_token(lead: User, reviewer: User) -> None:
    token_for(lead)
    record = ApiToken.objects.get()
    response = client_for(reviewer).post(reverse("api:token_revoke", args=[record.pk]))
    assert response.status_code == 404
    record.refresh_from_db()
    assert record.revoked_at is None


def test_the_tokens_page_needs_a_login(db: None) -> None:
    response = Client().get(reverse("api:tokens"))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
