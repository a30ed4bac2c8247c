"""Dates do not wrap (issue 16 item 15): every date a page prints is a ``<time>`` element,
which the style sheet keeps on one line."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from judging.models import JudgingRun
from tests.rubrics.factories import DatasetFactory

pytestmark = pytest.mark.django_db

DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})?")


def dates_outside_time(html: str) -> list[str]:
    body = html.split("<main", 1)[1]
    without = re.sub(r"<time\b[^>]*>.*?</time>", "", body, flags=re.S)
    without = re.sub(r'datetime="[^"]*"', "", without)
    return DATE.findall(without)


def test_list_pages_print_dates_as_time_elements(lead_client: Client) -> None:
    dataset = DatasetFactory()
    JudgingRun.objects.create(
        dataset=dataset, strategies=["s1b"], context="reference", provider="offline", model="m"
    )
    for name in ("judging:run_list", "rubrics:dataset_list"):
        html = lead_client.get(reverse(name)).content.decode()
        assert "<time" in html, name
        assert dates_outside_time(html) == [], name


def test_the_style_sheet_keeps_a_date_on_one_line() -> None:
    css = (Path(settings.BASE_DIR) / "static" / "css" / "app.css").read_text()
    assert re.search(r"(^|[\s,}])time\b[^{]*\{[^}]*white-space:\s*nowrap", css)
