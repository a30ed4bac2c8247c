"""The loop in a real browser: a lead sends a run's least certain verdicts to humans, two
annotators label them, the lead settles their one dispute, and the agreement report's
routing table and valid@k table show the figures computed here, independently, from the
labels and verdicts."""

import math
from pathlib import Path
from statistics import fmean

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer
from sklearn.metrics import accuracy_score, cohen_kappa_score

from judging.models import (
    Annotation,
    Assignment,
    Campaign,
    DisagreementTheme,
    JudgingRun,
    PatchJudgment,
)
from rubrics.models import Patch
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

V, I = "VALID", "INVALID"  # noqa: E741
KEYS = {V: "v", I: "i"}
# patch key → (team score, source, tests pass); the run says VALID from 50.
PATCHES = {
    "B1-a": (51.0, "agent-a", True),  # margin 0.01
    "B1-b": (90.0, "agent-b", True),
    "B2-a": (45.0, "agent-a", True),  # margin 0.05
    "B2-b": (53.0, "agent-b", False),  # margin 0.03
    "B3-a": (10.0, "agent-a", True),
    "B3-b": (42.0, "agent-b", True),  # margin 0.08
}
ROUTED = ["B1-a", "B2-b", "B2-a", "B3-b"]  # the four least certain, in that order
# What each annotator says of the routed patches: they disagree on B2-a only.
LABELS = {
    "ana": {"B1-a": I, "B2-b": I, "B2-a": V, "B3-b": I},
    "ben": {"B1-a": I, "B2-b": I, "B2-a": I, "B3-b": I},
}
SETTLED = {"B2-a": V}  # the lead's adjudication


def verdict(score: float) -> str:
    return V if score >= 50 else I


def test_a_lead_routes_annotators_label_and_the_report_shows_what_it_bought(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = DatasetFactory(name="Loop", slug="loop")
    bugs = {key: BugFactory(dataset=dataset, key=key) for key in ("B1", "B2", "B3")}
    patches: dict[str, Patch] = {
        key: PatchFactory(
            bug=bugs[key.split("-")[0]],
            key=key,
            source=source,
            tests_pass=passes,
            diff=make_diff(new=key),
        )
        for key, (_, source, passes) in PATCHES.items()
    }
    run = JudgingRun.objects.create(
        dataset=dataset, strategies=["rubric"], context="golden", provider="offline",
        model="offline", status=JudgingRun.Status.FINISHED, name="To route",
    )  # fmt: skip
    for key, (score, _, _) in PATCHES.items():
        PatchJudgment.objects.create(
            run=run, patch=patches[key], status="done", score=score, verdict=verdict(score)
        )
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    for name in LABELS:
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.ANNOTATOR])
    page = e2e_page

    # The lead previews the four least certain verdicts and sends them to both annotators.
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    page.locator("#run-route").click()
    page.locator("#id_patches").fill("4")
    for name in LABELS:
        page.get_by_label(name, exact=True).check()
    page.locator("#id_overlap").fill("2")
    page.locator("#route-preview").click()
    rows = page.locator("#route-patches tbody tr")
    expect(rows).to_have_count(4)
    assert [rows.nth(n).get_attribute("data-patch") for n in range(4)] == ROUTED
    # The preview is a POST: no CSRF token (nor anything) in the URL.
    assert page.url == f"{live_server.url}{run.get_absolute_url()}route/"
    expect(page.locator("#route-time")).to_contain_text("a default")
    screenshot(page, tmp_path / "route-preview.png", full_page=True)
    page.locator("#route-create").click()
    expect(page).to_have_url(f"{live_server.url}/campaigns/{Campaign.objects.get().pk}/")
    campaign = Campaign.objects.get()
    assert campaign.routed_from == run

    # Each annotator labels their queue with the keyboard.
    for name, labels in LABELS.items():
        fresh_session(page)
        log_in(page, live_server, name)
        queue = dict(
            Assignment.objects.filter(campaign=campaign, annotator__username=name).values_list(
                "position", "patch__key"
            )
        )
        assert sorted(queue.values()) == sorted(ROUTED)
        page.goto(f"{live_server.url}{reverse('judging:annotate', args=[campaign.pk, 1])}")
        for position in range(1, 5):
            expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
            after = (
                reverse("judging:annotate", args=[campaign.pk, position + 1])
                if position < 4
                else reverse("judging:annotate_queue", args=[campaign.pk])
            )
            page.keyboard.press(KEYS[labels[queue[position]]])
            page.wait_for_url(f"{live_server.url}{after}")
    assert Annotation.objects.count() == 8

    # The lead settles the one dispute.
    fresh_session(page)
    log_in(page, live_server, "lena")
    queue_url = reverse("judging:adjudication_queue", args=[dataset.slug])
    page.goto(f"{live_server.url}{queue_url}?campaign={campaign.pk}")
    disputed = patches["B2-a"]
    page.locator(f"#adjudicate-{disputed.pk}-valid").check()
    theme = DisagreementTheme.CORRECTNESS_ASSESSMENT
    page.locator(f"#adjudicate-{disputed.pk}-theme-{theme}").check()
    page.locator(f"#adjudicate-{disputed.pk}-save").click()
    expect(page.locator(f"#adjudicate-{disputed.pk}-saved")).to_be_visible()

    # The report: the routing table and valid@k, against figures computed here.
    page.goto(f"{live_server.url}{reverse('judging:report', args=[dataset.slug])}?run={run.pk}")
    expect(page.locator(".report-section .loading")).to_have_count(0)
    consensus = {key: SETTLED.get(key, LABELS["ana"][key]) for key in ROUTED}
    truth = [consensus[key] for key in ROUTED]
    for share in (0.0, 0.3, 0.5, 1.0):
        routed = math.ceil(share * len(ROUTED))
        hybrid = [
            consensus[key] if n < routed else verdict(PATCHES[key][0])
            for n, key in enumerate(ROUTED)
        ]
        row = page.locator(f"#routing-{run.pk} tr[data-share='{share}']")
        expect(row).to_have_count(1)
        accuracy = row.locator("td[data-figure=accuracy] .figure").get_attribute("data-value")
        assert math.isclose(float(str(accuracy)), accuracy_score(truth, hybrid), abs_tol=1e-6)
        kappa = row.locator("td[data-figure=kappa] .figure").get_attribute("data-value")
        expected = cohen_kappa_score(hybrid, truth, labels=[V, I])
        assert (kappa == "") if math.isnan(expected) else math.isclose(
            float(str(kappa)), expected, abs_tol=1e-6
        )  # fmt: skip
    expect(page.locator(f"#chart-routing-{run.pk}")).to_be_visible()

    # valid@1 per source: for each bug, the share of its source's candidates that pass and
    # are valid (consensus where there is one, otherwise the run's verdict).
    for source in ("agent-a", "agent-b"):
        per_bug = []
        for key, (score, own, passes) in PATCHES.items():
            if own == source:
                valid = consensus.get(key, verdict(score)) == V
                per_bug.append(1.0 if passes and valid else 0.0)
        cell = page.locator(
            f"#valid-at-k-table tr[data-source='{source}'][data-k='1'] "
            "td[data-figure=valid_at_k] .figure"
        )
        value = float(str(cell.get_attribute("data-value")))
        assert math.isclose(value, fmean(per_bug), abs_tol=1e-6)
    expect(page.locator("#chart-valid-at-k")).to_be_visible()


pytestmark = pytest.mark.e2e
