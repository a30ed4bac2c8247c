"""The judge beside the humans in a real browser (issue 28 item 1): the patch page sets each
run's verdict beside the consensus (a lead also sees the labels and the runs' links, a
reviewer neither), the verdict page shows the consensus, the labels and whether the judge
agrees (leads only); an annotator opens neither."""

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import Label, PatchJudgment
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import AnnotationFactory, bug_with_patches, finished_run

# Screenshots of each role's view are left in the test's tmp_path (see --basetemp).


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_judge_beside_the_humans_on_the_patch_and_verdict_pages(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    user_create(actor=None, username="rey", password=PASSWORD, roles=[Role.REVIEWER])
    ann = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    bob = user_create(actor=None, username="bob", password=PASSWORD, roles=[Role.ANNOTATOR])
    patch = bug_with_patches(1, key="Lang-1").patches.get()
    AnnotationFactory(patch=patch, annotator=ann, label=Label.INVALID, note="drops the check")
    AnnotationFactory(patch=patch, annotator=bob, label=Label.INVALID, note="overfits the test")
    members: dict[str, dict[str, Any]] = {"s1b": {"score": 35.0}, "s3": {"score": 20.0}}
    strict = finished_run(
        patch.dataset, {patch: ("INVALID", members)}, team=["s1b", "s3"], name="strict"
    )
    lenient: dict[str, dict[str, Any]] = {
        "s3": {"score": 90.0},
        "rubric": {"score": 100.0, "verdict": Label.VALID},
    }
    finished_run(patch.dataset, {patch: ("VALID", lenient)}, team=["s3", "rubric"], name="lenient")

    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}{patch.get_absolute_url()}")
    card = page.locator("#judge-humans")
    expect(card.locator(".consensus")).to_contain_text("1 of 2 verdicts agree with it")
    expect(card.locator("tr", has_text="strict")).to_contain_text("agrees with the consensus")
    expect(card.locator("tr", has_text="lenient")).to_contain_text("disagrees with the consensus")
    expect(page.locator("#labels")).to_contain_text("overfits the test")
    screenshot(card, tmp_path / "patch-lead-card.png")
    screenshot(page, tmp_path / "patch-lead.png", full_page=True)

    card.locator("tr", has_text="strict").get_by_role("link", name="INVALID").click()
    humans = page.locator("#humans")
    expect(humans).to_contain_text("The team’s verdict agrees with the consensus")
    expect(humans).to_contain_text("drops the check")
    screenshot(page, tmp_path / "verdict-lead.png", full_page=True)

    fresh_session(page)
    log_in(page, live_server, "rey")
    page.goto(f"{live_server.url}{patch.get_absolute_url()}")
    expect(page.locator("#judge-humans tr", has_text="lenient")).to_contain_text("disagrees")
    expect(page.locator("#labels")).to_have_count(0)
    expect(page.locator("#judge-humans a")).to_have_count(0)
    screenshot(page.locator("#judge-humans"), tmp_path / "patch-reviewer-card.png")
    screenshot(page, tmp_path / "patch-reviewer.png", full_page=True)
    verdict = PatchJudgment.objects.get(run=strict)
    response = page.goto(f"{live_server.url}{verdict.get_absolute_url()}")
    assert response is not None
    assert response.status == 403

    fresh_session(page)
    log_in(page, live_server, "ann")
    for url in (patch.get_absolute_url(), verdict.get_absolute_url()):
        response = page.goto(f"{live_server.url}{url}")
        assert response is not None
        assert response.status == 403
