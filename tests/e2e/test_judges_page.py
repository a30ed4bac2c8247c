"""The Judges pages in a real browser: a lead copies the Rule of Minimalism starter under a
name of their own, edits it (a new version with a note), sees the diff of the two versions,
previews the new one on a demo patch, and finds it offered, untested, on the new-run form."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgeVersion
from rubrics.bundle.services import bundle_import
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import DEMO_BUNDLE, PASSWORD

ADDED = "A renamed variable is an unnecessary change."


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_lead_copies_the_minimalism_starter_edits_it_and_previews_it_on_a_patch(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    with DEMO_BUNDLE.open("rb") as bundle:
        bundle_import(source=bundle, dataset_name="Demo", actor=None)
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": 1300, "height": 900})
    log_in(page, live_server, "lea")

    page.get_by_role("link", name="Judges", exact=True).click()
    expect(page.locator("#judges")).to_have_count(0)  # none yet
    screenshot(page, tmp_path / "judges-empty.png", full_page=True)
    page.get_by_role("link", name="Start from the Rule of Minimalism").click()
    expect(page.get_by_label("Template")).to_have_value(re.compile(r"\{\{ candidate_patch \}\}"))
    page.get_by_label("Name", exact=True).fill("strict-min")
    screenshot(page, tmp_path / "judge-new.png", full_page=True)
    page.get_by_role("button", name="Create the judge").click()
    expect(page).to_have_url(re.compile(r"/judges/strict-min/$"))
    expect(page.locator(".messages")).to_contain_text("Created strict-min@1")
    expect(page.locator("#test-card")).to_contain_text("Not tested yet")

    template = page.get_by_label("Template")
    template.fill(template.input_value() + "\n\n" + ADDED)
    page.get_by_label("Note").fill("renames count as unnecessary")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved strict-min@2")
    expect(page.locator("#version-2")).to_contain_text("renames count as unnecessary")
    diff = page.locator("#version-diff")
    expect(diff).to_contain_text("Changes from strict-min@1 to strict-min@2")
    expect(diff.locator("tr.added").last).to_contain_text(ADDED)
    screenshot(page, tmp_path / "judge-detail.png", full_page=True)

    page.get_by_role("link", name="Preview strict-min@2 on a patch").click()
    user = page.locator("#preview-user")
    expect(user).to_contain_text("<candidate_patch>")  # the data between tags, as sent
    expect(user).to_contain_text(ADDED)
    expect(page.locator("#preview-schema")).to_contain_text('"INVALID"')
    patch = page.locator("#previewed-patch").inner_text()
    page.get_by_label("Patch").select_option(index=1)
    page.get_by_role("button", name="Show the prompt").click()
    expect(page.locator("#previewed-patch")).not_to_have_text(patch)  # another real patch
    screenshot(page, tmp_path / "judge-preview.png", full_page=True)

    page.get_by_role("link", name="Judging runs").click()
    page.get_by_role("link", name="New run").first.click()
    written = page.locator("#written-judges")
    expect(written).to_contain_text("strict-min@2")
    expect(written).to_contain_text("untested")
    screenshot(page.locator("fieldset.team"), tmp_path / "run-new-written.png")
    page.get_by_role("banner").get_by_role("link", name="Judges").click()
    row = page.locator("#judges tr", has_text="strict-min")
    expect(row).to_contain_text("strict-min@2")
    expect(row).to_contain_text("Untested")
    screenshot(page, tmp_path / "judges-list.png", full_page=True)
    assert JudgeVersion.objects.filter(judge__name="strict-min").count() == 2
