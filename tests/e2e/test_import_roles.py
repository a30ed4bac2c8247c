"""Issue 28 item 3 in a real browser: after the demo's synthetic raters (``demo-rater-NN``,
who collide with no real dataset), a bundle naming an existing user without a role (as the
old demo's ``rater-01``) is refused with one message for that user; the lead ticks the box
that gives the annotator role, chooses the file again, and it imports."""

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.reports.synthetic import Shape, synthetic_dataset
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.bundles import bug, label, patch


@pytest.mark.e2e
def test_a_lead_gives_the_annotator_role_on_the_import_page_and_imports(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    shape = Shape(bugs=2, patches_per_bug=2, annotators=4, labels_per_patch=2, runs=1)
    synthetic_dataset("Demo report", shape)
    # What the demo made before issue 28: a role-less rater with an empty password.
    User.objects.get_or_create(username="rater-01")
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    records = [
        bug("Chart-1"),
        patch("le-1", "Chart-1"),
        patch("le-2", "Chart-1"),
        *(label(p, rater) for p in ("le-1", "le-2") for rater in ("rater-01", "rater-02")),
    ]
    bundle = tmp_path / "le.jsonl"
    bundle.write_text("".join(json.dumps(r) + "\n" for r in records))

    page = e2e_page
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/datasets/import/")
    page.get_by_label("Dataset").fill("Real labels")
    page.set_input_files("#id_file", bundle)
    page.get_by_role("button", name="Import").click()
    problems = page.locator(".import-errors tbody tr")
    expect(problems).to_have_count(1)  # one row for the user, not one per line
    expect(problems).to_contain_text("'rater-01' (named by 2 lines, this the first)")
    expect(page.locator("#grant-hint")).to_contain_text(
        "Only the annotator role stops this import: 1 existing user without any role"
        " (rater-01) is named as annotator."
    )
    screenshot(page, tmp_path / "import-refused.png", full_page=True)

    page.get_by_label("Give the annotator role to the existing users this file names").check()
    page.set_input_files("#id_file", bundle)
    page.get_by_role("button", name="Import").click()
    expect(page.locator("h1")).to_have_text("Real labels")
    expect(page.locator("body")).to_contain_text(
        "Gave the annotator role to 1 existing user the file names as annotators: rater-01."
    )
    screenshot(page, tmp_path / "import-granted.png", full_page=True)

    page.goto(f"{live_server.url}/users/?q=rater-0")
    rows = page.locator("#user-table tbody tr")
    expect(rows).to_have_count(6)  # demo-rater-00…03, rater-01, rater-02
    expect(page.locator("#user-table .no-password")).to_have_count(6)
    expect(rows.filter(has_text="demo-rater-00").get_by_label("Annotator")).not_to_be_checked()
    expect(rows.filter(has_text="rater-01").last.get_by_label("Annotator")).to_be_checked()
    screenshot(page, tmp_path / "users-no-password.png", full_page=True)
