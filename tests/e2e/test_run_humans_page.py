"""The run page beside the humans, in a real browser, as a lead: the card of the judge against
the consensus loads after the page, the Humans column shows each row's consensus, and the
filter "Judge disagrees with humans" keeps the contradicted verdicts, through htmx."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from judging.reports.synthetic import Shape, synthetic_dataset
from judging.runs.agreement import run_agreement
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_lead_sees_the_run_beside_the_humans(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = synthetic_dataset("E2E run humans", Shape(bugs=12, patches_per_bug=5, runs=1))
    run = JudgingRun.objects.get(dataset=dataset)
    card = run_agreement(run)
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")

    figures = page.locator("#run-agreement .agreement-figures")
    expect(figures).to_contain_text("Cohen's κ")
    accuracy = card.full.metrics["accuracy"].value
    assert accuracy is not None
    expect(figures).to_contain_text(f"{accuracy:.2f}")
    expect(page.locator("#run-agreement")).to_contain_text(f"n={card.full.n}")
    expect(page.locator("#run-table thead")).to_contain_text("Humans")
    screenshot(page, tmp_path / "run-humans.png", full_page=True)

    page.get_by_label("Judge disagrees with humans").check()
    expect(page.locator("#run-table")).to_contain_text(
        f"{card.disagreements} verdicts, where the judge disagrees with humans"
    )
    expect(page).to_have_url(re.compile(r"disagrees=1"))
    rows = page.locator("#run-table tbody tr")
    expect(rows).to_have_count(min(card.disagreements, 50))
    expect(rows.locator("td.humans.disagrees")).to_have_count(min(card.disagreements, 50))
    screenshot(page, tmp_path / "run-humans-disagreements.png", full_page=True)
