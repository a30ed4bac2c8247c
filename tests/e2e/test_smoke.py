"""Smoke test in a real browser: log in, import the demo bundle, read a bug's diff."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from rubrics.bundle.services import dataset_slug
from rubrics.models import Dataset
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import screenshot
from tests.helpers import DEMO_BUNDLE, PASSWORD

DATASET_NAME = "E2E smoke demo"


@dataclass(frozen=True)
class BundleBug:
    key: str
    path: str  # the first file the reference patch changes
    added: int
    removed: int


def bundle_bugs(bundle: Path) -> list[BundleBug]:
    """The bundle's bugs and what their reference patches change, read straight from the file

    (not through the app's parser, so that the page is checked against the file itself).
    """
    bugs = []
    for line in bundle.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("kind") != "bug":
            continue
        diff = record.get("reference_patch") or ""
        lines = diff.splitlines()
        paths = [m.group(1) for m in map(re.compile(r"^\+\+\+ (?:b/)?(\S+)").match, lines) if m]
        bugs.append(
            BundleBug(
                key=record["key"],
                path=paths[0] if paths else "",
                added=sum(1 for x in lines if x.startswith("+") and not x.startswith("+++")),
                removed=sum(1 for x in lines if x.startswith("-") and not x.startswith("---")),
            )
        )
    return bugs


@pytest.mark.e2e
def test_lead_imports_the_demo_bundle_and_reads_a_diff(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    assert DEMO_BUNDLE.is_file(), f"the demo bundle {DEMO_BUNDLE} is missing"
    bugs = bundle_bugs(DEMO_BUNDLE)
    assert bugs, f"{DEMO_BUNDLE} has no bug record"
    # A bug whose reference patch both adds and removes lines: its page shows both kinds.
    shown = next((b for b in bugs if b.added and b.removed and b.path != "/dev/null"), None)
    assert shown is not None, f"no bug in {DEMO_BUNDLE} has a reference patch with +/- lines"
    user_create(actor=None, username="e2e-lead", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page

    # Log in through the form, as a person would.
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page).to_have_title(re.compile("Log in"))
    page.get_by_label("Username").fill("e2e-lead")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".topbar .who")).to_contain_text("e2e-lead")

    # The lead's menu leads to the import page.
    page.locator(".topbar nav").get_by_role("link", name="Import").click()
    expect(page.get_by_role("heading", name="Import a bundle")).to_be_visible()
    page.get_by_label("Dataset").fill(DATASET_NAME)
    page.get_by_label("Bundle file").set_input_files(DEMO_BUNDLE)
    page.get_by_role("button", name="Import").click()

    # Imported: the dataset page, with its bugs.
    slug = dataset_slug(DATASET_NAME)
    expect(page).to_have_url(f"{live_server.url}/datasets/{slug}/")
    expect(page.locator(".messages")).to_contain_text(f"Imported {DEMO_BUNDLE.name}")
    expect(page.get_by_role("heading", level=1)).to_have_text(DATASET_NAME)
    table = page.locator("#bug-table")
    expect(table).to_contain_text(f"{len(bugs)} bug")
    expect(table.locator("tbody tr")).to_have_count(min(len(bugs), 50))
    dataset = Dataset.objects.get(slug=slug)  # the ORM, from the test, while the browser runs
    assert dataset.bugs.count() == len(bugs)
    screenshot(page, tmp_path / "dataset-page.png", full_page=True)

    # A bug's page renders its reference patch as a diff, not as text.
    table.get_by_role("link", name=shown.key, exact=True).click()
    expect(page).to_have_url(f"{live_server.url}/datasets/{slug}/bugs/{shown.key}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(shown.key)
    reference = page.locator("section.card").filter(
        has=page.get_by_role("heading", name="Reference patch")
    )
    expect(reference.locator(".diff-invalid")).to_have_count(0)
    expect(reference.locator(".diff-file-header .path").first).to_contain_text(shown.path)
    diff_table = reference.locator(".diff-table").first
    expect(diff_table).to_be_visible()
    expect(diff_table.locator("tr.hunk").first).to_contain_text("@@")
    expect(reference.locator(".diff-table tr.added")).to_have_count(shown.added)
    expect(reference.locator(".diff-table tr.removed")).to_have_count(shown.removed)
    expect(diff_table.locator("tr.added").first).to_be_visible()
    expect(diff_table.locator("tr.removed").first).to_be_visible()
    # Added and removed lines are told apart by colour, not only by their sign.
    added_bg = diff_table.locator("tr.added td.code").first.evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )
    removed_bg = diff_table.locator("tr.removed td.code").first.evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )
    assert added_bg != removed_bg, (added_bg, removed_bg)

    # One screenshot the suite takes for real: ``make screenshots`` depends on them working.
    picture = tmp_path / "bug-page.png"
    page.screenshot(path=picture, full_page=True)
    assert picture.stat().st_size > 0
    print(f"screenshot: {picture}")
