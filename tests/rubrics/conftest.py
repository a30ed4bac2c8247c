"""Fixtures shared by the rubrics tests."""

import pytest
from django.contrib.auth.models import User

from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD


@pytest.fixture
def reviewer2(db: None) -> User:
    """A second reviewer, to confirm (or send back) what ``reviewer`` wrote."""
    return user_create(actor=None, username="reviewer2", password=PASSWORD, roles=[Role.REVIEWER])
