"""My labels in a real browser (issue 16 items 8 and 17): each label names its bug and its
place in the annotator's queue, never the patch's key; its link opens the patch there, where
the annotator changes the label while the campaign is open; once the lead closes the
campaign, the page says the label is final."""

from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.annotations.services import annotation_record, campaign_close
from judging.models import Annotation, Assignment, Label
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import AnnotationFactory, create_campaign
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

KEY = "repairtool-Closure-2-p7"  # a key that names the tool: the annotator must not see it


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_an_annotator_changes_a_label_from_my_labels_until_the_campaign_closes(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    dataset = DatasetFactory(name="Labels in place", slug="labels-in-place")
    bug = BugFactory(dataset=dataset, key="Closure-2", title="The compiler drops a cast")
    PatchFactory(bug=bug, key=KEY, diff=make_diff(new="x = 3"))
    PatchFactory(bug=bug, key="repairtool-Closure-2-p8", diff=make_diff(new="x = 4"))
    lead = user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    ann = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    campaign = create_campaign(dataset, [ann], name="Round 1", overlap=1)
    place = Assignment.objects.get(campaign=campaign, annotator=ann, patch__key=KEY)
    annotation_record(campaign=campaign, annotator=ann, patch=place.patch, label=Label.VALID)
    # Imported, of a patch in none of ann's campaigns: named by its place among its bug's.
    other = BugFactory(dataset=dataset, key="Lang-7")
    PatchFactory(bug=other, key="repairtool-Lang-7-p1")
    imported = PatchFactory(bug=other, key="repairtool-Lang-7-p2")
    AnnotationFactory(annotator=ann, patch=imported, label=Label.INVALID, origin="imported")

    log_in(page, live_server, "ann")
    page.locator(".topbar nav").get_by_role("link", name="My labels").click()
    row = page.locator(f"#my-labels tr[data-position='{place.position}']")
    expect(row).to_contain_text("Closure-2")
    expect(row).to_contain_text(f"Patch {place.position} of 2 in Round 1")
    expect(row).to_contain_text(Label.VALID)
    expect(row).to_have_attribute("data-changeable", "true")
    outside = page.locator("#my-labels tr[data-bug='Lang-7']")
    expect(outside).to_contain_text("Patch 2 of 2 of bug Lang-7")
    expect(outside).to_contain_text("Not in your campaigns")
    assert "repairtool" not in page.content()
    screenshot(page, tmp_path / "my-labels.png", full_page=True)

    # Its link opens the patch at its place; the annotator changes the label there.
    row.get_by_role("link", name="Change").click()
    annotate = reverse("judging:annotate", args=[campaign.pk, place.position])
    page.wait_for_url(f"{live_server.url}{annotate}")
    expect(page).to_have_title(
        f"Bug Closure-2 · patch {place.position} of 2 in Round 1 · SE-Jury web"
    )
    expect(page.locator("#annotate-place")).to_contain_text("Closure-2")
    assert "repairtool" not in page.content()
    expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
    page.keyboard.press("i")
    page.wait_for_url(lambda url: url != f"{live_server.url}{annotate}")
    assert Annotation.objects.get(annotator=ann, patch=place.patch).label == Label.INVALID
    # The next page confirms the label, with an undo (issue 28 item 5): z brings VALID back.
    bar = page.locator("#annotate-undo-bar")
    expect(bar).to_contain_text("Labelled INVALID")
    screenshot(page, tmp_path / "annotate-undo-bar.png")
    page.keyboard.press("z")
    page.wait_for_url(f"{live_server.url}{annotate}")
    expect(page.locator(".messages")).to_contain_text("Undid your label INVALID: back to VALID")
    # A success looks like one: green (--add-bg), not the blue of an information.
    success = page.locator(".messages li.success")
    expect(success).to_have_css("background-color", "rgb(231, 247, 234)")
    expect(page.locator("#annotate-current-label")).to_have_attribute("data-label", "VALID")
    assert Annotation.objects.get(annotator=ann, patch=place.patch).label == Label.VALID
    screenshot(page, tmp_path / "annotate-undone.png")
    page.keyboard.press("i")
    page.wait_for_url(lambda url: url != f"{live_server.url}{annotate}")
    assert Annotation.objects.get(annotator=ann, patch=place.patch).label == Label.INVALID
    page.goto(f"{live_server.url}{reverse('judging:my_labels')}")
    expect(row).to_contain_text(Label.INVALID)

    # Closed: the label is final, and the page says so; its place is still there to read.
    campaign_close(campaign=campaign, actor=lead)
    page.reload()
    expect(row).to_have_attribute("data-changeable", "false")
    expect(row).to_contain_text("Final: Round 1 is closed")
    expect(row.get_by_role("link", name="Change")).to_have_count(0)
    row.get_by_role("link", name=f"Patch {place.position} of 2").click()
    page.wait_for_url(f"{live_server.url}{annotate}")
    expect(page.locator("#annotate-closed")).to_be_visible()
    expect(page.locator("#label-valid")).to_be_disabled()
