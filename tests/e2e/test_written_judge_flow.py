"""Issue 29's story in a real browser, with a real worker on the offline model: a lead copies
the Rule of Minimalism starter, edits it (a new version with a note), previews it on a patch of
the demo dataset, tests it (the quality ladders and the labelled patches), marks it trusted and
runs a team with it from the new-run form; the run finishes and a verdict shows the judge's
member. An annotator rates a campaign's two dimensions with the digits, and the lead's report
shows the ordinal agreement on them, beside the written judge that rated them in the run."""

import json
import re
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.annotations.services import annotation_record
from judging.dimensions import Dimension
from judging.judges.services import STARTERS, judge_define
from judging.models import Annotation, Assignment, JudgeTest, JudgeVersion, JudgingRun, Label
from rubrics.bundle.services import bundle_import
from rubrics.ladders.services import ladders_build
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot, wait_until_ready
from tests.helpers import DEMO_BUNDLE, PASSWORD
from tests.judging.factories import create_campaign

ADDED = "A renamed variable is an unnecessary change."
# The worker's runs: the test's six (ladders, the judge, the team, three baselines), then the
# lead's own run; a cold worker on a SQLite broker needs some seconds before the first.
WORKER_TIMEOUT_MS = 90_000


@pytest.mark.e2e
@pytest.mark.worker
def test_a_lead_writes_tests_trusts_and_runs_a_judge_and_annotators_rate_its_dimensions(
    worker: subprocess.Popen[bytes], live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    with DEMO_BUNDLE.open("rb") as bundle:
        demo = bundle_import(source=bundle, dataset_name="Demo", actor=None).dataset
    ladders_build(dataset=demo, actor=None)
    starter = json.loads((STARTERS / "nonfunctional.json").read_text(encoding="utf-8"))
    judge_define(data=starter, actor=None)  # nonfunctional@1, untested: rates the dimensions
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    ann = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    bea = user_create(actor=None, username="bea", password=PASSWORD, roles=[Role.ANNOTATOR])
    page = e2e_page
    page.set_viewport_size({"width": 1300, "height": 900})

    def shot(name: str, *, full_page: bool = True) -> None:
        screenshot(page, tmp_path / f"{name}.png", full_page=full_page)

    # 1. A copy of the starter, under a name of the lead's own.
    log_in(page, live_server, "lea")
    page.get_by_role("link", name="Judges", exact=True).click()
    page.get_by_role("link", name="Start from the Rule of Minimalism").click()
    expect(page.get_by_label("Template")).to_have_value(re.compile(r"\{\{ candidate_patch \}\}"))
    page.get_by_label("Name", exact=True).fill("strict-min")
    # The dimension fields show only while the answer kind that reads them is chosen.
    expect(page.get_by_label("Dimensions", exact=True)).to_be_hidden()
    page.locator("input[name=kind][value=dimensions]").check()
    expect(page.get_by_label("Dimensions", exact=True)).to_be_visible()
    page.locator("input[name=kind][value=verdict]").check()
    shot("judge-new")
    page.get_by_role("button", name="Create the judge").click()
    expect(page.locator(".messages")).to_contain_text("Created strict-min@1")
    expect(page.locator("#test-card")).to_contain_text("Not tested yet")
    expect(page.locator("#trust-form")).to_have_count(0)

    # 2. Edited: a new version with a note, and the diff of the two.
    page.get_by_role("link", name="Write the next version").click()
    expect(page).to_have_url(re.compile(r"#edit$"))
    template = page.get_by_label("Template")
    template.fill(template.input_value() + "\n\n" + ADDED)
    page.get_by_label("Note").fill("renames count as unnecessary")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved strict-min@2")
    expect(page.locator("#version-2")).to_contain_text("renames count as unnecessary")
    diff = page.locator("#version-diff")
    expect(diff).to_contain_text("Changes from strict-min@1 to strict-min@2")
    expect(diff.locator("tr.added").last).to_contain_text(ADDED)
    shot("judge-edited")

    # 3. Previewed on a patch of the chosen dataset: the prompt as a run would send it.
    page.get_by_role("link", name="Preview strict-min@2 on a patch").click()
    first = page.locator("#previewed-patch").inner_text()
    page.get_by_label("Dataset").select_option(label="Demo")
    page.get_by_label("Patch").select_option(index=1)
    page.get_by_role("button", name="Show the prompt").click()
    expect(page.locator("#previewed-patch")).not_to_have_text(first)  # another real patch
    user = page.locator("#preview-user")
    expect(user).to_contain_text("<candidate_patch>")
    expect(user).to_contain_text(ADDED)
    expect(page.locator("#preview-schema")).to_contain_text('"INVALID"')
    shot("judge-preview")

    # 4. Tested on the worker: the ladders and the labelled patches, then trusted.
    wait_until_ready(tmp_path / "worker.log")
    page.get_by_role("link", name="strict-min", exact=True).first.click()
    card = page.locator("#test-card")
    card.get_by_label("Dataset").select_option(label="Demo")
    card.get_by_role("button", name="Test strict-min@2").click()
    expect(card.locator("#test-progress")).to_be_visible()
    shot("judge-testing")
    expect(card.locator("#test-ladder")).to_be_visible(timeout=WORKER_TIMEOUT_MS)
    expect(card).to_contain_text("Measured with the offline heuristic, not an LLM")
    expect(card.locator("#test-row-judge")).to_contain_text("strict-min@2")
    expect(card.locator("#test-labelled tbody tr")).to_have_count(7)  # judge, team, 3 + 2 baselines
    expect(card.locator("#test-row-team")).to_contain_text("s1b,s3")  # the default team
    expect(card.locator("#test-kappa")).to_contain_text(re.compile(r"above|overlaps|below"))
    test = JudgeTest.objects.get()
    kappa = test.figures["labelled"]["columns"]["judge"]["kappa"]["value"]
    cell = card.locator("#test-row-judge td").nth(1).locator(".figure")
    assert float(cell.get_attribute("data-value") or "nan") == pytest.approx(kappa, abs=1e-6)
    # The page's header and history say what the card says, without a reload.
    expect(page.locator("#newest-status")).to_have_text("Tested")
    expect(page.locator("#version-2-status")).to_have_text("Tested")
    shot("judge-tested")
    card.get_by_role("button", name="Mark strict-min@2 trusted").click()
    expect(page.locator(".messages")).to_contain_text("strict-min@2 is trusted")
    expect(page.locator("#version-status")).to_have_text("Trusted")
    page.get_by_role("banner").get_by_role("link", name="Judges").click()
    row = page.locator("#judges tr", has_text="strict-min")
    expect(row).to_contain_text("strict-min@2")
    expect(row).to_contain_text("Trusted")
    shot("judges-list")

    # 5. A team with it, from the new-run form: the trusted judge by its name, and the
    # non-functional starter (untested, so by its number) to rate the dimensions.
    page.get_by_role("link", name="Judging runs").click()
    page.get_by_role("link", name="New run").first.click()
    page.get_by_label("Dataset").select_option(demo.slug)
    for name in ("rubric", "s1b", "s3"):  # the default team, left for the judges alone
        page.locator(f"#id_strategies_{name}").uncheck()
    written = page.locator("#written-judges")
    expect(written.locator("li", has_text="strict-min")).to_contain_text("trusted: strict-min@2")
    expect(written.locator("li", has_text="nonfunctional@1")).to_contain_text("untested")
    written.get_by_label(re.compile(r"strict-min\b")).check()
    written.get_by_label(re.compile(r"nonfunctional@1")).check()
    page.get_by_label("Context").select_option("reference")
    page.get_by_label("Name").fill("Written team")
    shot("run-new-written")
    page.get_by_role("button", name="Start the run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    run = JudgingRun.objects.get(name="Written team")
    assert run.strategies == ["nonfunctional@1", "strict-min@2"]  # as the form lists them
    expect(page.locator("#run-progress .badge")).to_have_text("Finished", timeout=WORKER_TIMEOUT_MS)
    shot("run-finished")
    page.locator("#run-table tbody tr a").first.click()
    member = page.locator("[id='member-strict-min@2']")
    expect(member).to_be_visible()
    expect(member).to_contain_text("[offline heuristic — not an LLM]")
    shot("verdict")

    # 6. An annotator rates two dimensions with the digits; another has rated them before.
    dimensions = [Dimension("maintainability", 1, 5), Dimension("security", 1, 5)]
    campaign = create_campaign(demo, [ann, bea], name="Rated", dimensions=dimensions)
    place = {a.position: a.patch for a in Assignment.objects.filter(annotator=ann)}
    for position, (maintainability, security) in enumerate([(4, 2), (3, 3), (2, 1)], 1):
        annotation_record(
            campaign=campaign, annotator=bea, patch=place[position], label=Label.VALID,
            ratings={"maintainability": maintainability, "security": security},
        )  # fmt: skip
    fresh_session(page)
    log_in(page, live_server, "ann")
    for position, keys, label in [(1, "42", "v"), (2, "32", "i"), (3, "21", "v")]:
        page.goto(f"{live_server.url}{reverse('judging:annotate', args=[campaign.pk, position])}")
        expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
        expect(page.locator("#dimension-maintainability")).to_have_class(
            "dimension dimension-current"
        )
        # The first digit rates maintainability; the second, now highlighted, security.
        page.keyboard.press(keys[0])
        if position == 1:
            expect(page.locator("#rating-security-none")).to_be_checked()
            page.keyboard.press("9")  # off the scale: nothing
            expect(page.locator("#rating-security-none")).to_be_checked()
        page.keyboard.press(keys[1])
        if position == 1:
            expect(page.locator("#rating-maintainability-4")).to_be_checked()
            expect(page.locator("#rating-security-2")).to_be_checked()
            shot("annotate-dimensions", full_page=False)
        with page.expect_navigation():
            page.keyboard.press(label)
    assert {
        position: Annotation.objects.get(annotator=ann, patch=place[position]).ratings
        for position in (1, 2, 3)
    } == {
        1: {"maintainability": 4, "security": 2},
        2: {"maintainability": 3, "security": 2},
        3: {"maintainability": 2, "security": 1},
    }

    # 7. The lead's report: each dimension's ordinal agreement, the written judge beside.
    fresh_session(page)
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}{reverse('judging:report', args=[demo.slug])}?run={run.pk}")
    for name in ("maintainability", "security"):
        section = page.locator(f"#dimension-{name}")
        expect(section).to_contain_text("Krippendorff's α (ordinal)")
        expect(section.locator("tr[data-member='nonfunctional@1']")).to_be_visible()
    page.locator("#dimension-maintainability").scroll_into_view_if_needed()
    screenshot(page.locator("#human-judge"), tmp_path / "report-dimensions.png")
    assert JudgeVersion.objects.get(judge__name="strict-min", number=2).status == "trusted"
    print(f"screenshots: {tmp_path}")
