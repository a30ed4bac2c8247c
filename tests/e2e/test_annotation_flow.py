"""Annotation to report in a real browser: a lead opens a calibration campaign, two
annotators label its sample with the keyboard, the lead adjudicates their dispute, picks a
team from a finished run, and reads the agreement report (paper 004 Tables 5–6, paper 000
§III-B and RQ2)."""

import math
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer
from sklearn.metrics import cohen_kappa_score

from judging.models import (
    Adjudication,
    Annotation,
    Assignment,
    Calibration,
    Campaign,
    DisagreementTheme,
    JudgingRun,
    Label,
    PatchJudgment,
)
from judging.runs.services import run_create
from rubrics.models import Dataset, Patch
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.factories import (
    DRAFT_TEXT,
    GOLDEN_TEXT,
    BugFactory,
    DatasetFactory,
    PatchFactory,
    make_diff,
    rubric_for,
)

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
KEYS: dict[str, str] = {VALID: "v", INVALID: "i", UNSURE: "u"}
BUGS = 3
SAMPLE = 6  # of the dataset's nine patches
SEED = 1  # draws two patches of each kind, from all three bugs
ANNOTATORS = ("ann", "bea")
NOTE = "It ignores the requirement about every caller: f() still returns 1 for some."
THEME = DisagreementTheme.OVERLOOKED_REQUIREMENTS
# What each annotator says of the sampled patches, best patches first (see ``quality``):
# two unanimous VALID, one VALID with an UNSURE (too few decisive labels), one dispute
# (with a note), two unanimous INVALID.
PLAN: list[tuple[str, str]] = [
    (VALID, VALID),
    (VALID, VALID),
    (VALID, UNSURE),
    (INVALID, VALID),
    (INVALID, INVALID),
    (INVALID, INVALID),
]
TOO_FEW, DISPUTED = 2, 3  # indices in PLAN
CONSENSUS_OF_DISPUTE = VALID
# How close each kind of patch is to its bug's reference fix (x = 1 → x = 2).
KINDS = {
    "same": (2, make_diff(new="x = 2")),
    "near": (1, make_diff(new="x = 1 + 1")),
    "tests": (0, make_diff(path="tests/test_app.py", old="y = 1", new="y = 0")),
}
# A cold browser and the eager run take a few seconds; the whole flow stays well under this.
FLOW_BUDGET_S = 60


def make_dataset() -> Dataset:
    """Three bugs with a golden rubric, each with a patch of every kind."""
    dataset = DatasetFactory(name="E2E annotation", slug="e2e-annotation")
    for b in range(BUGS):
        bug = BugFactory(
            dataset=dataset,
            key=f"AB-{b}",
            title=f"f() returns 1 instead of 2 (case {b})",
            bug_type="wrong_constant" if b else "missing_check",
        )
        rubric_for(bug, draft=DRAFT_TEXT, golden=GOLDEN_TEXT)
        for kind, (_, diff) in KINDS.items():
            PatchFactory(bug=bug, key=f"AB-{b}-{kind}", diff=diff, source=f"agent-{kind}")
    return dataset


def judged(**kwargs: Any) -> JudgingRun:
    run = run_create(**{"actor": None, **kwargs})
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED, run.status
    assert run.provider == "offline"
    return run


def quality(patch: Patch) -> tuple[int, str]:
    return (-KINDS[patch.key.rsplit("-", 1)[1]][0], patch.key)


def wait_for_htmx(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def figure(page: Page, selector: str) -> tuple[str | None, str | None]:
    """The figure at ``selector``: its ``data-value`` and ``data-n`` attributes."""
    element = page.locator(selector)
    expect(element).to_have_count(1)
    return element.get_attribute("data-value"), element.get_attribute("data-n")


def close_to(expected: float) -> Callable[[str | None], bool]:
    return lambda value: value is not None and math.isclose(float(value), expected, abs_tol=1e-5)


def label_queue(
    page: Page,
    server: LiveServer,
    campaign: Campaign,
    user: User,
    labels: dict[int, str],
    note_on: int | None = None,
) -> None:
    """``user`` logs in and labels their whole queue with the keyboard, in queue order."""
    fresh_session(page)
    log_in(page, server, user.username)
    page.locator(".topbar nav").get_by_role("link", name="My campaigns").click()
    row = page.locator(f"#annotate-campaigns tr[data-campaign='{campaign.pk}']")
    expect(row).to_have_attribute("data-done", "0")
    expect(row).to_have_attribute("data-assigned", str(SAMPLE))
    row.get_by_role("link", name="Continue").click()
    page.locator("#annotate-continue").click()
    queue = dict(
        Assignment.objects.filter(campaign=campaign, annotator=user).values_list(
            "position", "patch_id"
        )
    )
    assert sorted(queue) == list(range(1, SAMPLE + 1))
    for position in range(1, SAMPLE + 1):
        expect(page).to_have_url(
            f"{server.url}{reverse('judging:annotate', args=[campaign.pk, position])}"
        )
        expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
        progress = page.locator("#annotate-progress")
        expect(progress).to_have_attribute("data-done", str(position - 1))
        expect(progress).to_have_attribute("data-total", str(SAMPLE))
        expect(page.locator("#annotate-rubric")).to_contain_text("Return two")
        patch_id = queue[position]
        if patch_id == note_on:
            page.locator("#annotate-note").click()
            page.keyboard.type(NOTE)  # its v, i and u are text, not labels
            expect(page.locator("#annotate-note")).to_have_value(NOTE)
            page.keyboard.press("Escape")
            expect(page.locator("#annotate-note")).not_to_be_focused()
        else:
            page.wait_for_timeout(150)  # a glance at the diff: the page times the label
        after = (
            reverse("judging:annotate", args=[campaign.pk, position + 1])
            if position < SAMPLE
            else reverse("judging:annotate_queue", args=[campaign.pk])
        )
        page.keyboard.press(KEYS[labels[patch_id]])
        page.wait_for_url(f"{server.url}{after}")
    expect(page.locator("#annotate-done")).to_be_visible()
    expect(page.locator("#annotate-queue li[data-label='']")).to_have_count(0)


def expected_alpha(plan: list[tuple[str, str]]) -> float:
    """Krippendorff's α (nominal) of the plan's decisive labels, by the reference package."""
    code: dict[str, float] = {VALID: 1.0, INVALID: 0.0}
    data = [[code.get(labels[rater], np.nan) for labels in plan] for rater in range(2)]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_annotators_label_the_lead_adjudicates_calibrates_and_reads_the_report(
    live_server: LiveServer, e2e_page: Page, eager_tasks: None, tmp_path: Path
) -> None:
    started = time.monotonic()
    dataset = make_dataset()
    lead = user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    annotators = [
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.ANNOTATOR])
        for name in ANNOTATORS
    ]
    # Two finished offline runs: every LLM strategy on the golden rubric, and a small team
    # on the reference patch (the calibration page must be told which run to use).
    team_run = judged(
        dataset=dataset,
        strategies="rubric,s1a,s1b,s2,s3",
        context="golden",
        name="All strategies",
        actor=lead,
    )
    small_run = judged(dataset=dataset, strategies="s1b,s3", context="reference", actor=lead)
    page = e2e_page

    # The lead creates a calibration campaign: a sample of six, both annotators on each.
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}{reverse('judging:campaign_new')}")
    form = page.locator("#campaign-form")
    form.locator("#id_dataset").select_option(dataset.slug)
    form.locator("#id_name").fill("Calibration round 1")
    form.locator("#id_purpose_0").check()
    form.locator("#id_selection_1").check()
    form.locator("#id_sample_size").fill(str(SAMPLE))
    form.locator("#id_seed").fill(str(SEED))
    for name in ANNOTATORS:
        form.locator(f"input[name=annotators][data-username={name}]").check()
    form.locator("#id_overlap").fill("2")
    form.locator("#id_show_rubric").check()
    page.locator("#campaign-create").click()
    expect(page).to_have_url(re.compile(r"/campaigns/\d+/$"))
    campaign = Campaign.objects.get()
    assert page.url == f"{live_server.url}{reverse('judging:campaign_detail', args=[campaign.pk])}"
    expect(page.locator("#campaign-facts")).to_have_attribute("data-status", "open")
    assert (campaign.purpose, campaign.selection, campaign.overlap, campaign.show_rubric) == (
        Campaign.Purpose.CALIBRATION,
        Campaign.Selection.SAMPLE,
        2,
        True,
    )
    for name in ANNOTATORS:
        expect(page.locator(f"#campaign-annotators tr[data-annotator={name}]")).to_have_attribute(
            "data-assigned", str(SAMPLE)
        )
    # The seeded sample: the same patches on every draw.
    every = list(dataset.patches.order_by("pk").values_list("pk", flat=True))
    sampled = sorted(Patch.objects.filter(assignments__campaign=campaign).distinct(), key=quality)
    assert sorted(p.pk for p in sampled) == sorted(random.Random(SEED).sample(every, SAMPLE))  # noqa: S311
    plans = {patch.pk: labels for patch, labels in zip(sampled, PLAN, strict=True)}
    disputed, too_few = sampled[DISPUTED], sampled[TOO_FEW]

    # Each annotator labels the sample with the keyboard; the first leaves a note.
    for rater, user in enumerate(annotators):
        labels = {patch_id: plan[rater] for patch_id, plan in plans.items()}
        label_queue(
            page,
            live_server,
            campaign,
            user,
            labels,
            note_on=disputed.pk if rater == 0 else None,
        )
        given = Annotation.objects.filter(annotator=user, campaign=campaign)
        assert dict(given.values_list("patch_id", "label")) == labels
        assert all(seconds > 0 for seconds in given.values_list("seconds_spent", flat=True))
    notes = dict(Annotation.objects.exclude(note="").values_list("patch_id", "note"))
    assert notes == {disputed.pk: NOTE}

    # The lead sees the dispute, with both labels and the note, and settles it.
    fresh_session(page)
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}{reverse('judging:adjudication_queue', args=[dataset.slug])}")
    counts = {
        name: page.locator(f"#count-{name}") for name in ("unanimous", "adjudicated", "waiting")
    }
    expect(counts["unanimous"]).to_have_text("4")
    expect(counts["adjudicated"]).to_have_text("0")
    expect(counts["waiting"]).to_have_text("2")
    expect(page.locator(f"#adjudication-{too_few.pk}")).to_have_attribute("data-state", "too_few")
    card = page.locator(f"#adjudication-{disputed.pk}")
    expect(card).to_have_attribute("data-state", "disputed")
    rows = card.locator(".adjudication-labels tbody tr")
    expect(rows).to_have_count(2)
    ann, bea = (rows.filter(has=page.get_by_role("cell", name=n, exact=True)) for n in ANNOTATORS)
    expect(ann).to_contain_text(INVALID)
    expect(ann).to_contain_text(NOTE)
    expect(bea).to_contain_text(VALID)
    expect(bea).not_to_contain_text(INVALID)
    page.locator(f"#adjudicate-{disputed.pk}-valid").check()
    page.locator(f"#adjudicate-{disputed.pk}-theme-{THEME}").check()
    page.locator(f"#adjudicate-{disputed.pk}-save").click()
    expect(page.locator(f"#adjudicate-{disputed.pk}-saved")).to_be_visible()
    expect(page.locator(f"#adjudication-{disputed.pk}")).to_have_attribute(
        "data-state", "adjudicated"
    )
    expect(counts["adjudicated"]).to_have_text("1")
    expect(counts["waiting"]).to_have_text("1")
    expect(counts["unanimous"]).to_have_text("4")
    adjudication = Adjudication.objects.get()
    assert (adjudication.patch_id, adjudication.label, adjudication.themes) == (
        disputed.pk,
        CONSENSUS_OF_DISPUTE,
        [THEME],
    )
    assert adjudication.decided_by == lead

    # Calibration: the campaign and the full run; the best team is pre-selected.
    page.goto(f"{live_server.url}{reverse('judging:calibration')}")
    page.locator("#id_campaign").select_option(str(campaign.pk))
    expect(page.locator("#calibration-ranking")).to_be_visible()
    wait_for_htmx(page)
    page.locator("#id_run").select_option(str(team_run.pk))
    expect(page).to_have_url(re.compile(rf"run={team_run.pk}"))
    expect(page.locator("#calibration-body .run-facts")).to_contain_text(
        f"Run {team_run.pk}: All strategies"
    )
    wait_for_htmx(page)
    expect(page.locator("#calibration-n")).to_contain_text("5 with a consensus")
    radios = page.locator("#calibration-ranking input[name=team]")
    assert radios.count() > 2
    expect(radios.first).to_be_checked()
    expect(page.locator("#calibration-ranking input[name=team]:checked")).to_have_count(1)
    best = radios.first.get_attribute("value")
    assert best
    # Ranked by the mean of τ-b and ρ (undefined last): the first row is a best team.
    means = [
        None if text == "—" else float(text)
        for text in page.locator("#calibration-ranking tbody tr td:nth-child(6)").all_inner_texts()
    ]
    defined = [mean for mean in means if mean is not None]
    assert defined, means
    assert means[: len(defined)] == sorted(defined, reverse=True), means
    expect(page.locator("#calibration-body .offline-note")).to_be_visible()
    screenshot(page, tmp_path / "calibration.png", full_page=True)
    page.locator("#use-team").click()
    expect(page.locator("#calibration-team")).to_have_attribute("data-team", best)
    chosen = Calibration.objects.get()
    assert page.url == f"{live_server.url}{reverse('judging:calibration_detail', args=[chosen.pk])}"
    assert (chosen.campaign, chosen.run, chosen.team, chosen.chosen_by, chosen.patch_count) == (
        campaign,
        team_run,
        best.split(","),
        lead,
        5,
    )
    page.locator("#start-run-with-team").click()
    expect(page).to_have_url(re.compile(re.escape(reverse("judging:run_new")) + r"\?"))
    ticked = page.locator("input[name=strategies]:checked")
    expect(ticked).to_have_count(len(chosen.team))
    assert sorted(box.get_attribute("value") or "" for box in ticked.all()) == sorted(chosen.team)

    # The report of the dataset, with the full run: what the annotators and the lead did.
    report_url = reverse("judging:report", args=[dataset.slug]) + f"?run={team_run.pk}"
    page.goto(f"{live_server.url}{report_url}")
    alpha = expected_alpha(PLAN)
    # By hand: ten pairable labels, five of each; one of the five pairs disagrees, so
    # D_o = 2/10 and D_e = 2·5·5/(10·9): α = 1 − 0.2/(5/9) = 0.64.
    assert math.isclose(alpha, 0.64)
    human = "#human-summary tr[data-figure={}] td[data-column={}] .figure"
    value, n = figure(page, human.format("alpha", "labelled"))
    assert close_to(alpha)(value), (value, alpha)
    value, n = figure(page, human.format("unanimous", "labelled"))
    assert close_to(4 / SAMPLE)(value), value
    assert n == str(SAMPLE)
    counted = {
        key: figure(page, human.format(key, "labelled"))[0]
        for key in ("patches", "consensus_valid", "consensus_invalid", "awaiting")
    }
    assert counted == {
        "patches": str(SAMPLE),
        "consensus_valid": "3",
        "consensus_invalid": "2",
        "awaiting": "1",
    }
    assert figure(page, human.format("patches", "b_full"))[0] == "5"
    assert figure(page, human.format("patches", "b_clear"))[0] == "4"

    # The judge against the consensus: the run's verdicts on the five patches with one.
    consensus = {
        patch_id: CONSENSUS_OF_DISPUTE if patch_id == disputed.pk else labels[0]
        for patch_id, labels in plans.items()
        if patch_id != too_few.pk
    }
    verdicts = dict(PatchJudgment.objects.filter(run=team_run).values_list("patch_id", "verdict"))
    accuracy = sum(verdicts[p] == label for p, label in consensus.items()) / len(consensus)
    heading = page.locator(f"#judge-table th[data-run='{team_run.pk}']")
    expect(heading).to_be_visible()
    expect(heading.locator(".tag.offline")).to_be_visible()
    expect(page.locator(f"#judge-notes li[data-run='{team_run.pk}']")).to_contain_text(
        OFFLINE_MARKER
    )
    expect(page.locator(f"#judge-table th[data-run='{small_run.pk}']")).to_have_count(0)
    cell = f"#judge-table tr[data-figure=accuracy-b_full] td[data-run='{team_run.pk}'] .figure"
    value, n = figure(page, cell)
    assert close_to(accuracy)(value), (value, accuracy)
    assert n == "5"

    # RQ2: the judge paired with each annotator, on the patches each labelled decisively.
    for rater, name in enumerate(ANNOTATORS):
        decisive = {p: labels[rater] for p, labels in plans.items() if labels[rater] != UNSURE}
        kappa = cohen_kappa_score(
            [verdicts[p] for p in decisive], list(decisive.values()), labels=[VALID, INVALID]
        )
        cell = f"#human-judge-table tr[data-annotator={name}] td[data-run='{team_run.pk}'] .figure"
        value, n = figure(page, cell)
        assert n == str(len(decisive)), (name, n)
        if math.isnan(kappa):
            assert value == "", (name, value)
        else:
            assert close_to(float(kappa))(value), (name, value, kappa)
    screenshot(page, tmp_path / "report.png", full_page=True)

    # The JSON export is the same report.
    href = page.locator("#export-json").get_attribute("href")
    assert href
    assert "format=json" in href
    response = page.request.get(
        f"{live_server.url}{reverse('judging:report', args=[dataset.slug])}{href}"
    )
    assert response.ok
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    labelled = data["humans"]["columns"]["labelled"]
    assert math.isclose(labelled["alpha"]["value"], alpha, abs_tol=1e-9)
    assert (labelled["consensus_valid"]["value"], labelled["consensus_invalid"]["value"]) == (3, 2)
    assert [run["id"] for run in data["runs"]] == [team_run.pk]
    assert data["runs"][0]["offline"] is True
    assert time.monotonic() - started < FLOW_BUDGET_S
    print(f"screenshots: {tmp_path}; {time.monotonic() - started:.1f} s")
