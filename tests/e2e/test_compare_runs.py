"""Compare two runs in a real browser (issue 28 item 3): the dataset comes first, choosing
another one offers its runs only (htmx swaps the form), and the two newest are chosen."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import Label
from rubrics.models import Patch
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import finished_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

# Screenshots are left in the test's tmp_path (see --basetemp).


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_lead_chooses_the_dataset_then_compares_two_of_its_runs(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    demo = DatasetFactory(name="Runs demo", slug="runs-demo")
    patches = [
        PatchFactory(bug=BugFactory(dataset=demo, key=f"BUG-{n}"), key=f"P-{n}", diff=make_diff())
        for n in range(3)
    ]
    said = [Label.VALID, Label.INVALID, Label.VALID]
    first = finished_run(demo, {p: (v, {}) for p, v in zip(patches, said, strict=True)}, team=[])
    flipped = [Label.VALID, Label.VALID, Label.INVALID]
    second = finished_run(
        demo, {p: (v, {}) for p, v in zip(patches, flipped, strict=True)}, team=[], name="retry"
    )
    other = DatasetFactory(name="Elsewhere", slug="elsewhere")
    PatchFactory(bug=BugFactory(dataset=other, key="E-1"), key="E-1-p")
    alone = Patch.objects.get(key="E-1-p")
    finished_run(other, {alone: (Label.VALID, {})}, team=[], name="alone")

    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/runs/compare/")
    # The newest run's dataset first: one run there, which cannot be compared.
    expect(page.locator("#id_dataset")).to_have_value("elsewhere")
    expect(page.locator("#compare-too-few")).to_have_text(
        "Elsewhere has 1 run: comparing needs two."
    )
    screenshot(page, tmp_path / "compare-too-few.png", full_page=True)

    page.locator("#id_dataset").select_option("runs-demo")
    expect(page.locator("#id_a option")).to_have_count(2)
    expect(page.locator("#id_a")).to_have_value(str(first.pk))
    expect(page.locator("#id_b")).to_have_value(str(second.pk))
    assert "dataset=runs-demo" in page.url  # the choice is in the address, to come back to
    page.get_by_role("button", name="Compare").click()
    expect(page.locator(".compare-counts")).to_contain_text("A VALID, B INVALID")
    expect(page.locator("#differing h2")).to_have_text("Patches with different verdicts (2)")
    expect(page.locator("#id_dataset")).to_have_value("runs-demo")
    screenshot(page, tmp_path / "compare-two-runs.png", full_page=True)
