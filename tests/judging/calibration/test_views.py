"""The adjudication and calibration pages: leads only; recording a consensus (with and
without htmx); ranking teams, choosing one, and the new-run link it offers."""

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.calibration.forms import NO_CAMPAIGN
from judging.calibration.selectors import ONE_LABEL, calibration_evaluate
from judging.calibration.views import BODY_TARGET
from judging.consensus.services import THEMES_REQUIRED
from judging.consensus.views import PER_PAGE
from judging.models import (
    Adjudication,
    Annotation,
    Calibration,
    Campaign,
    JudgingRun,
    Label,
    StrategyResult,
)
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset, Patch
from tests.judging.calibration.factories import campaign_of, run_of
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
HTMX = {"HTTP_HX_REQUEST": "true"}
Capture = Callable[..., Any]


@pytest.fixture
def dataset() -> Dataset:
    dataset = DatasetFactory(name="Views demo", slug="views-demo")
    bug = BugFactory(dataset=dataset, key="B", title="B: f() returns 1")
    for n in range(4):
        PatchFactory(bug=bug, key=f"P-{n}")
    return dataset


def patch(dataset: Dataset, key: str) -> Patch:
    return dataset.patches.get(key=key)


@pytest.fixture
def campaign(dataset: Dataset) -> Campaign:
    """P-0 VALID, P-1 INVALID (unanimous), P-2 disputed with notes, P-3 too few labels."""
    return campaign_of(
        dataset,
        {
            patch(dataset, "P-0"): (VALID, VALID),
            patch(dataset, "P-1"): (INVALID, INVALID, UNSURE),
            patch(dataset, "P-2"): (VALID, INVALID),
            patch(dataset, "P-3"): (VALID, UNSURE),
        },
    )


@pytest.fixture
def run(dataset: Dataset, campaign: Campaign) -> JudgingRun:
    p0, p1, p2, p3 = (patch(dataset, f"P-{n}") for n in range(4))
    return run_of(
        dataset,
        ["s1a", "s1b", "s3", "bleu"],
        {
            p0: {"s1a": 90, "s1b": 70, "s3": 80, "bleu": 10},
            p1: {"s1a": 20, "s1b": 60, "s3": 10, "bleu": 10},
            p2: {"s1a": 50, "s1b": 50, "s3": 50, "bleu": 10},
            p3: {"s1a": 70, "s1b": 30, "s3": 90, "bleu": 10},
        },
    )


def urls(dataset: Dataset, campaign: Campaign, run: JudgingRun) -> list[tuple[str, str]]:
    chosen = Calibration.objects.create(campaign=campaign, run=run, team=["s1a", "s3"])
    return [
        ("get", reverse("judging:adjudication_index")),
        ("get", reverse("judging:adjudication_queue", args=[dataset.slug])),
        (
            "post",
            reverse("judging:adjudication_save", args=[dataset.slug, patch(dataset, "P-2").pk]),
        ),
        ("get", reverse("judging:calibration") + f"?campaign={campaign.pk}"),
        ("post", reverse("judging:calibration_choose")),
        ("get", reverse("judging:calibration_detail", args=[chosen.pk])),
    ]


def test_the_pages_are_for_leads_only(
    dataset: Dataset,
    campaign: Campaign,
    run: JudgingRun,
    annotator_client: Client,
    reviewer_client: Client,
    lead_client: Client,
) -> None:
    for method, url in urls(dataset, campaign, run):
        for client in (annotator_client, reviewer_client):
            assert getattr(client, method)(url).status_code == 403, url
        assert Client().get(url).status_code == 302, url  # to the login page
    assert lead_client.get(reverse("judging:adjudication_index")).status_code == 200
    assert not Adjudication.objects.exists()


def test_the_index_lists_datasets_with_labels(
    campaign: Campaign, dataset: Dataset, lead_client: Client
) -> None:
    DatasetFactory(name="Unlabelled")
    html = lead_client.get(reverse("judging:adjudication_index")).content.decode()
    assert "Views demo" in html
    assert "Unlabelled" not in html
    assert f"?campaign={campaign.pk}" in html


def test_the_queue_shows_labels_notes_and_counts(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    Annotation.objects.filter(patch=patch(dataset, "P-2"), label=INVALID).update(
        note="misses the null case"
    )
    url = reverse("judging:adjudication_queue", args=[dataset.slug]) + f"?campaign={campaign.pk}"
    response = lead_client.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    assert re.search(r'id="count-unanimous">2<', html)
    assert re.search(r'id="count-adjudicated">0<', html)
    assert re.search(r'id="count-waiting">2<', html)
    cards = re.findall(r'data-patch-key="(P-\d)" data-state="(\w+)"', html)
    assert cards == [("P-2", "disputed"), ("P-3", "too_few")]  # disputed first
    assert "misses the null case" in html
    assert "annotator1" in html
    assert patch(dataset, "P-2").get_absolute_url() in html  # the diff
    p2 = patch(dataset, "P-2").pk
    for element in ("valid", "invalid", "theme-rubric_ambiguity", "note", "save"):
        assert f'id="adjudicate-{p2}-{element}"' in html


def test_recording_a_consensus_without_htmx(
    dataset: Dataset, campaign: Campaign, lead_client: Client, lead: User
) -> None:
    p2 = patch(dataset, "P-2")
    url = reverse("judging:adjudication_save", args=[dataset.slug, p2.pk])
    response = lead_client.post(
        url,
        {
            "label": INVALID,
            "themes": ["overlooked_requirements", "other"],
            "note": "null case",
            "campaign": campaign.pk,
        },
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"?campaign={campaign.pk}#adjudication-{p2.pk}")
    adjudication = Adjudication.objects.get(patch=p2)
    assert (adjudication.label, adjudication.themes, adjudication.decided_by) == (
        INVALID,
        ["overlooked_requirements", "other"],
        lead,
    )
    html = lead_client.get(response["Location"]).content.decode()
    assert re.search(r'id="count-adjudicated">1<', html)
    assert "Overlooked requirements" in html  # listed among the adjudicated, with its themes


def test_a_refused_consensus_keeps_what_the_lead_entered(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    p2 = patch(dataset, "P-2")
    url = reverse("judging:adjudication_save", args=[dataset.slug, p2.pk])
    response = lead_client.post(url, {"label": VALID, "note": "kept", "campaign": campaign.pk})
    html = response.content.decode()
    assert response.status_code == 400
    assert THEMES_REQUIRED in html
    assert f'id="adjudicate-{p2.pk}-valid" checked' in html
    assert ">kept</textarea>" in html
    assert not Adjudication.objects.exists()


def test_recording_with_htmx_swaps_the_card_and_the_counts(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    p3 = patch(dataset, "P-3")
    url = reverse("judging:adjudication_save", args=[dataset.slug, p3.pk])
    response = lead_client.post(url, {"label": VALID, "campaign": campaign.pk}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert f'id="adjudication-{p3.pk}"' in html
    assert 'data-state="adjudicated"' in html
    assert f'id="adjudicate-{p3.pk}-saved"' in html
    assert 'id="adjudication-counts" class="stats" hx-swap-oob="true"' in html
    assert re.search(r'id="count-waiting">1<', html)
    assert Adjudication.objects.get(patch=p3).label == VALID
    refused = lead_client.post(
        reverse("judging:adjudication_save", args=[dataset.slug, patch(dataset, "P-2").pk]),
        {"label": VALID},
        **HTMX,
    )
    assert refused.status_code == 200  # htmx swaps only 2xx: the card shows the error
    assert THEMES_REQUIRED in refused.content.decode()


def calibration_url(campaign: Campaign, run: JudgingRun | None = None) -> str:
    query = f"?campaign={campaign.pk}" + (f"&run={run.pk}" if run else "")
    return reverse("judging:calibration") + query


def test_the_calibration_page_ranks_teams_and_preselects_the_best(
    dataset: Dataset, campaign: Campaign, run: JudgingRun, lead_client: Client
) -> None:
    empty = lead_client.get(reverse("judging:calibration"))
    assert empty.status_code == 200
    assert campaign.name in empty.content.decode()
    response = lead_client.get(calibration_url(campaign))  # the best-covering run is taken
    html = response.content.decode()
    assert response.status_code == 200
    best = calibration_evaluate(campaign=campaign, run=run).best
    checked = re.findall(r'name="team" value="([^"]+)" id="([^"]+)" checked', html)
    assert checked == [(best.key, "team-" + "-".join(best.team))]
    assert html.count('name="team"') == 4  # s1a+s1b, s1a+s3, s1b+s3, all three
    assert 'id="calibration-ranking"' in html
    assert f'<option value="{run.pk}" selected>' in html
    assert "offline model" not in html


def test_an_htmx_pick_renders_only_the_body(
    campaign: Campaign, run: JudgingRun, lead_client: Client
) -> None:
    response = lead_client.get(calibration_url(campaign, run), HTTP_HX_TARGET=BODY_TARGET, **HTMX)
    html = response.content.decode()
    assert html.startswith('<div id="calibration-body">')
    assert "<html" not in html


def test_an_offline_run_is_marked_once_not_on_every_row(
    campaign: Campaign, run: JudgingRun, lead_client: Client
) -> None:
    StrategyResult.objects.filter(judgment__run=run, strategy="s3").update(is_offline=True)
    html = lead_client.get(calibration_url(campaign, run)).content.decode()
    assert "offline heuristic" in html
    assert html.count('class="tag offline"') == 1
    assert "offline model" not in html
    # The kept calibration's page says it once too.
    lead_client.post(
        reverse("judging:calibration_choose"),
        {"campaign": campaign.pk, "run": run.pk, "team": "s1a,s3"},
    )
    detail = lead_client.get(
        reverse("judging:calibration_detail", args=[Calibration.objects.get().pk])
    ).content.decode()
    assert detail.count('class="tag offline"') == 1


def test_a_campaign_with_one_label_class_is_explained(
    dataset: Dataset, lead_client: Client
) -> None:
    p0, p1 = patch(dataset, "P-0"), patch(dataset, "P-1")
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (VALID, VALID)})
    run_of(dataset, ["s1b", "s3"], {p0: {"s1b": 1, "s3": 2}, p1: {"s1b": 3, "s3": 4}})
    html = lead_client.get(calibration_url(campaign)).content.decode()
    assert ONE_LABEL.format(n=2, label=VALID) in html.replace("&quot;", '"')
    assert 'id="use-team"' not in html


def test_a_campaign_without_runs_says_so(campaign: Campaign, lead_client: Client) -> None:
    html = lead_client.get(calibration_url(campaign)).content.decode()
    assert 'id="calibration-no-run"' in html


def test_using_a_team_stores_a_calibration_and_offers_a_run(
    dataset: Dataset, campaign: Campaign, run: JudgingRun, lead_client: Client, lead: User
) -> None:
    response = lead_client.post(
        reverse("judging:calibration_choose"),
        {"campaign": campaign.pk, "run": run.pk, "team": "s1a,s3"},
    )
    chosen = Calibration.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:calibration_detail", args=[chosen.pk])
    assert (chosen.team, chosen.chosen_by, chosen.patch_count) == (["s1a", "s3"], lead, 2)
    html = lead_client.get(response["Location"]).content.decode()
    link = re.search(r'id="start-run-with-team" href="([^"]+)"', html)
    assert link is not None
    url = urlsplit(link.group(1).replace("&amp;", "&"))
    assert url.path == reverse("judging:run_new")
    assert parse_qs(url.query) == {"dataset": [dataset.slug], "team": ["s1a,s3"]}
    assert 'id="calibration-history"' in html
    assert 'class="tag ok">chosen' in html
    # The calibration page lists it among the dataset's calibrations.
    page = lead_client.get(calibration_url(campaign, run)).content.decode()
    assert reverse("judging:calibration_detail", args=[chosen.pk]) in page


def test_show_teams_without_a_campaign_says_so(
    campaign: Campaign, run: JudgingRun, lead_client: Client
) -> None:
    response = lead_client.get(reverse("judging:calibration"), {"campaign": "", "run": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert NO_CAMPAIGN in html.replace("&#x27;", "'")
    assert 'class="form-errors"' in html
    # By htmx (the campaign select emptied), the body shows it, with a status htmx swaps.
    partial = lead_client.get(
        reverse("judging:calibration"), {"campaign": ""}, HTTP_HX_TARGET=BODY_TARGET, **HTMX
    )
    assert partial.status_code == 200
    assert NO_CAMPAIGN in partial.content.decode().replace("&#x27;", "'")
    # The bare page, before any pick, is no error.
    assert NO_CAMPAIGN not in lead_client.get(reverse("judging:calibration")).content.decode()


def test_a_kept_calibration_is_listed_and_reopens_with_its_team_picked(
    dataset: Dataset,
    campaign: Campaign,
    run: JudgingRun,
    lead_client: Client,
    django_assert_max_num_queries: Capture,
) -> None:
    index = lead_client.get(reverse("judging:calibration")).content.decode()
    assert 'id="calibration-none-kept"' in index
    lead_client.post(
        reverse("judging:calibration_choose"),
        {"campaign": campaign.pk, "run": run.pk, "team": "s1b,s3"},
    )
    chosen = Calibration.objects.get()
    detail_url = reverse("judging:calibration_detail", args=[chosen.pk])

    # Listed on the calibration page before any campaign is picked, with its dataset.
    index = lead_client.get(reverse("judging:calibration")).content.decode()
    history = index[index.index('id="calibration-history"') :]
    assert f'href="{detail_url}"' in history
    assert dataset.name in history
    assert "s1b</code> + <code>s3" in history
    # Its page reopens the ranking it came from, where its team is picked and marked.
    detail = lead_client.get(detail_url).content.decode()
    reopen = re.search(r'id="reopen-ranking" href="([^"]+)"', detail)
    assert reopen is not None
    reopened = lead_client.get(reopen.group(1).replace("&amp;", "&")).content.decode()
    checked = re.findall(r'name="team" value="([^"]+)" id="[^"]+" checked', reopened)
    assert checked == ["s1b,s3"]
    assert 'id="calibration-kept"' in reopened
    assert reopened.count('class="tag ok">chosen') == 1

    # The list costs the same queries however many calibrations were kept.
    for _ in range(30):
        Calibration.objects.create(campaign=campaign, run=run, team=["s1a", "s3"], patch_count=2)
    with django_assert_max_num_queries(8):
        index = lead_client.get(reverse("judging:calibration")).content.decode()
    assert index.count("/calibration/") > 25  # a page of them, and a pager
    assert "Page 1 of 2" in index


def test_a_team_that_is_no_candidate_is_refused(
    campaign: Campaign, run: JudgingRun, lead_client: Client
) -> None:
    response = lead_client.post(
        reverse("judging:calibration_choose"),
        {"campaign": campaign.pk, "run": run.pk, "team": "s3,bleu"},
        follow=True,
    )
    assert "is not a candidate team" in response.content.decode()
    assert not Calibration.objects.exists()


def test_the_queue_of_the_le2019_labels_renders_in_a_few_queries(
    le2019_bundle: Path, lead_client: Client
) -> None:
    with le2019_bundle.open("rb") as f:
        dataset = bundle_import(source=f, dataset_name="le2019", actor=None).dataset
    labelled = Annotation.objects.filter(patch__dataset=dataset).values("patch").distinct()
    url = reverse("judging:adjudication_queue", args=[dataset.slug])
    with CaptureQueriesContext(connection) as queries:
        response = lead_client.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    counts = {name: int(n) for name, n in re.findall(r'id="count-(\w+)">(\d+)<', html)}
    assert sum(counts.values()) == labelled.count()
    # The first page of the waiting patches (issue 16 item 13: 57 disputes made one page of
    # 39,000 px).
    assert html.count('class="card adjudication"') == min(counts["waiting"], PER_PAGE)
    assert len(queries) < 20, "\n".join(q["sql"][:150] for q in queries.captured_queries)
