"""Every response carries a strict Content-Security-Policy and a Permissions-Policy (issue 16
item 2); the browser tests fail on any CSP violation (tests/e2e/conftest.py)."""

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["login", "home"])
def test_pages_carry_the_policies(client: Client, lead_client: Client, name: str) -> None:
    response = (client if name == "login" else lead_client).get(reverse(name), follow=True)
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert "camera=()" in response["Permissions-Policy"]
    assert "microphone=()" in response["Permissions-Policy"]


def test_no_page_template_has_an_inline_script_or_style(lead_client: Client) -> None:
    """What the policy relies on: scripts and styles come from files."""
    html = lead_client.get(reverse("rubrics:dataset_list")).content.decode()
    assert "<script>" not in html
    assert "<style" not in html
    assert ' style="' not in html
    assert '"includeIndicatorStyles": false' in html
    assert '"attributesToSettle": ["class", "width", "height"]' in html
