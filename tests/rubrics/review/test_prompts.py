"""How every prompt names a bug: its key once, even when its title starts with the key (as
every le2019 title does: "Chart-19: failing test …")."""

import pytest

from rubrics.models import Rubric
from rubrics.review.prompts import bug_heading, draft_request
from tests.rubrics.factories import BugFactory


@pytest.mark.parametrize(
    ("key", "title", "heading"),
    [
        ("BUG-7", "x is wrong", "Bug BUG-7: x is wrong"),
        ("Chart-19", "Chart-19: failing test T::t", "Bug Chart-19: failing test T::t"),
        ("Chart-19", "Chart-19", "Bug Chart-19"),
        ("Chart-19", "Chart-19 fails", "Bug Chart-19 fails"),
        ("Chart-1", "Chart-10: another bug's title", "Bug Chart-1: Chart-10: another bug's title"),
        (
            "django__django-11099",
            "django__django-11099_x",
            "Bug django__django-11099: django__django-11099_x",
        ),
        ("B", "", "Bug B"),
    ],
)
def test_the_key_is_said_once(key: str, title: str, heading: str) -> None:
    assert bug_heading(key, title) == heading


@pytest.mark.django_db
def test_the_draft_prompt_says_the_key_once() -> None:
    bug = BugFactory(key="Chart-19", title="Chart-19: failing test T::t")

    request = draft_request(bug, variant=Rubric.Variant.TEMPLATED)

    user = request.messages[-1].content
    assert user.startswith("Bug Chart-19: failing test T::t\n")
    assert user.count("Chart-19") == 1
