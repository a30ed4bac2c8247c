"""Plain helpers shared by the whole suite: data paths, the test users' password, clients."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

SHARED_DIR = Path(settings.BASE_DIR).parent / "shared"
LE2019_BUNDLE = SHARED_DIR / "datasets" / "defects4j-le2019" / "bundle.jsonl"
DEMO_BUNDLE = Path(settings.BASE_DIR) / "rubrics" / "demo" / "bundle.jsonl"
PASSWORD = "correct horse battery staple"


def client_for(user: User) -> Client:
    """A test client logged in as ``user``."""
    client = Client()
    client.force_login(user)
    return client


def logs_in(client: Client, username: str, password: str) -> bool:
    """Log in through the login page, as a person does (and as login throttling sees it);
    whether it worked. ``Client.login`` would skip the page and the throttle."""
    response = client.post(reverse("login"), {"username": username, "password": password})
    return response.status_code == 302 and "_auth_user_id" in client.session
