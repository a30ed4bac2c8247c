"""Fixtures shared by the whole suite: users in each role, logged-in clients, data paths."""

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from sejury_web.roles import Role
from sejury_web.users import user_create

SHARED_DIR = Path(settings.BASE_DIR).parent / "shared"
LE2019_BUNDLE = SHARED_DIR / "datasets" / "defects4j-le2019" / "bundle.jsonl"
DEMO_BUNDLE = Path(settings.BASE_DIR) / "rubrics" / "demo" / "bundle.jsonl"
PASSWORD = "correct horse battery staple"


@pytest.fixture
def le2019_bundle() -> Path:
    """The real Defects4J patch-correctness data of Le et al. (read-only, never copied)."""
    if not LE2019_BUNDLE.is_file():
        pytest.skip(f"{LE2019_BUNDLE} is absent (a fresh clone has no ../shared)")
    return LE2019_BUNDLE


@pytest.fixture
def lead(db: None) -> User:
    return user_create(username="lead", password=PASSWORD, roles=[Role.LEAD])


@pytest.fixture
def reviewer(db: None) -> User:
    return user_create(username="reviewer", password=PASSWORD, roles=[Role.REVIEWER])


@pytest.fixture
def annotator(db: None) -> User:
    return user_create(username="annotator", password=PASSWORD, roles=[Role.ANNOTATOR])


def _client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def lead_client(lead: User) -> Client:
    return _client_for(lead)


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return _client_for(reviewer)


@pytest.fixture
def annotator_client(annotator: User) -> Client:
    return _client_for(annotator)
