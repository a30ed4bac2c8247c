"""Rated dimensions in a real browser (issue 29 item 5): an annotator rates a campaign's two
dimensions with the digits (each digit rates the highlighted dimension and moves on; one off
the scale does nothing) and labels with v; the lead's report shows the ordinal agreement
beside a written judge's ratings."""

from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.annotations.services import annotation_record
from judging.dimensions import Dimension
from judging.models import Annotation, Assignment, Label, StrategyResult
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import create_campaign, finished_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

MEMBER = "nonfunctional@1"


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_an_annotator_rates_two_dimensions_with_the_keyboard_and_the_lead_reads_them(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    dataset = DatasetFactory(name="Rated in the browser", slug="rated-browser")
    bug = BugFactory(dataset=dataset, key="Lang-3", title="Parsing drops the sign")
    patches = [PatchFactory(bug=bug, diff=make_diff(new=f"x = -{n}")) for n in range(3)]
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    ann = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    bea = user_create(actor=None, username="bea", password=PASSWORD, roles=[Role.ANNOTATOR])
    dimensions = [Dimension("maintainability", 1, 5), Dimension("security", 1, 3)]
    campaign = create_campaign(dataset, [ann, bea], name="Rated", dimensions=dimensions)
    for n, patch in enumerate(patches):
        annotation_record(
            campaign=campaign, annotator=bea, patch=patch, label=Label.VALID,
            ratings={"maintainability": 4 - n, "security": 3 - n},
        )  # fmt: skip
    judged = {
        patch: (
            Label.VALID,
            {
                MEMBER: {
                    "score": 50.0,
                    "answers": {
                        "judge": {
                            "dimensions": {
                                "maintainability": {"rating": 4 - n, "reason": "ok"},
                                "security": {"rating": 3, "reason": "ok"},
                            }
                        }
                    },
                }
            },
        )
        for n, patch in enumerate(patches)
    }
    run = finished_run(dataset, judged, team=[MEMBER], context="reference")
    StrategyResult.objects.filter(judgment__run=run).update(prompt_version=f"written:{MEMBER}")

    log_in(page, live_server, "ann")
    for position, keys, label in [(1, "49", "v"), (2, "32", "i"), (3, "21", "v")]:
        page.goto(f"{live_server.url}{reverse('judging:annotate', args=[campaign.pk, position])}")
        expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
        expect(page.locator("#dimension-maintainability")).to_have_class(
            "dimension dimension-current"
        )
        # The first digit rates maintainability; the second rates security (9 is off both
        # scales and off security's 1–3: on the first page it does nothing).
        for key in keys:
            page.keyboard.press(key)
        if position == 1:
            expect(page.locator("#rating-maintainability-4")).to_be_checked()
            expect(page.locator("#rating-security-none")).to_be_checked()
            page.keyboard.press("2")
            expect(page.locator("#rating-security-2")).to_be_checked()
            screenshot(page, tmp_path / "annotate-dimensions.png")
        with page.expect_navigation():  # the label is posted, and the next patch opens
            page.keyboard.press(label)
    place = {a.position: a.patch_id for a in Assignment.objects.filter(annotator=ann)}
    ratings = {
        position: Annotation.objects.get(annotator=ann, patch_id=place[position]).ratings
        for position in place
    }
    assert ratings == {
        1: {"maintainability": 4, "security": 2},
        2: {"maintainability": 3, "security": 2},
        3: {"maintainability": 2, "security": 1},
    }

    fresh_session(page)
    log_in(page, live_server, "lena")
    page.goto(
        f"{live_server.url}{reverse('judging:report', args=[dataset.slug])}?runs=1&run={run.pk}"
    )
    section = page.locator("#dimension-maintainability")
    expect(section).to_contain_text("Krippendorff's α (ordinal)")
    expect(section.locator(f"tr[data-member='{MEMBER}']")).to_contain_text(MEMBER)
    expect(page.locator("#dimension-security")).to_be_visible()
    section.scroll_into_view_if_needed()
    screenshot(page.locator("#human-judge"), tmp_path / "report-dimensions.png")
