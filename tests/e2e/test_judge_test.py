"""*Test this judge* in a real browser: a lead tests the Rule of Minimalism on the demo
dataset (its ladders built, its labels imported), reads the card's two measurements beside
the current team and the baselines, and marks the version trusted.

The tasks run inline (``eager_tasks``): the worker's part is tested on its own, with a real
worker, in ``tests/judging/judges/test_testing.py``; here the page is what is tested."""

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.judges.services import STARTERS, judge_define
from judging.models import JudgeTest, JudgeVersion
from rubrics.bundle.services import bundle_import
from rubrics.ladders.services import ladders_build
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import DEMO_BUNDLE, PASSWORD


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_lead_tests_a_written_judge_and_marks_it_trusted(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path, eager_tasks: None
) -> None:
    with DEMO_BUNDLE.open("rb") as bundle:
        demo = bundle_import(source=bundle, dataset_name="Demo", actor=None).dataset
    ladders_build(dataset=demo, actor=None)
    data = json.loads((STARTERS / "minimalism.json").read_text(encoding="utf-8"))
    judge_define(data=data, actor=None)
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": 1300, "height": 900})
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}/judges/minimalism/")
    card = page.locator("#test-card")
    expect(card).to_contain_text("Not tested yet")
    expect(card.locator("#trust-form")).to_have_count(0)

    card.get_by_label("Dataset").select_option(label="Demo")
    card.get_by_role("button", name="Test minimalism@1").click()
    expect(card.locator("#test-ladder")).to_be_visible(timeout=30_000)
    expect(card).to_contain_text("Measured with the offline heuristic, not an LLM")
    expect(card.locator("#test-labelled tbody tr")).to_have_count(7)  # judge, team, 3 + 2 baselines
    expect(card.locator("#test-row-team")).to_contain_text("s1b,s3")  # the default team
    expect(card.locator("#test-kappa")).to_contain_text(re.compile(r"above|overlaps|below"))
    test = JudgeTest.objects.get()
    kappa = test.figures["labelled"]["columns"]["judge"]["kappa"]["value"]
    cell = card.locator("#test-row-judge td").nth(1).locator(".figure")
    if kappa is not None:
        assert float(cell.get_attribute("data-value") or "nan") == pytest.approx(kappa, abs=1e-6)
    screenshot(card, tmp_path / "judge-test-card.png")

    card.get_by_role("button", name="Mark minimalism@1 trusted").click()
    expect(page.locator(".messages")).to_contain_text("minimalism@1 is trusted")
    expect(page.locator("#version-status")).to_have_text("Trusted")
    assert JudgeVersion.objects.get().status == JudgeVersion.Status.TRUSTED
    screenshot(page, tmp_path / "judge-trusted.png", full_page=True)
