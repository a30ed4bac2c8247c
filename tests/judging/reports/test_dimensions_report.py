"""Rated dimensions in the agreement report: the annotators' ratings from a campaign with
dimensions and a written judge's from its results' answers, read by the report, shown in the
human–judge section, and in the JSON and CSV exports."""

import json
import statistics

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from api.schemas import AgreementReportOut
from judging.annotations.services import annotation_record
from judging.dimensions import Dimension
from judging.models import Label
from judging.reports.figures import Sampling
from judging.reports.selectors import agreement_report
from sejury_web.llm import OFFLINE_MARKER
from tests.judging.annotations.test_views import make_annotator
from tests.judging.factories import create_campaign, written_rating_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db
# Per patch: the three annotators' maintainability ratings (None: not rated) and the judge's.
HUMANS = [(1, 2, 1), (4, 4, 5), (3, None, 3), (5, 5, 4), (2, 3, None), (2, 2, 2), (4, 5, 5)]
JUDGE = [2, 4, 3, 5, 1, 3, None]
SOURCES = ("agent-a", "agent-b")


def test_the_report_shows_each_rated_dimension_beside_the_written_judge(
    lead_client: Client, annotator: User
) -> None:
    dataset = DatasetFactory(name="Rated report", slug="rated-report")
    bug = BugFactory(dataset=dataset)
    patches = [
        PatchFactory(bug=bug, diff=make_diff(new=f"z = {n}"), source=SOURCES[n % 2])
        for n in range(len(HUMANS))
    ]
    people = [annotator, make_annotator("rater-2"), make_annotator("rater-3")]
    campaign = create_campaign(
        dataset, people, overlap=3, dimensions=[Dimension("maintainability", 1, 5)]
    )
    for patch, ratings in zip(patches, HUMANS, strict=True):
        for person, rating in zip(people, ratings, strict=True):
            annotation_record(
                campaign=campaign, annotator=person, patch=patch, label=Label.VALID,
                ratings={} if rating is None else {"maintainability": rating},
            )  # fmt: skip
    member = "nonfunctional@1"
    run = written_rating_run(dataset, member, dict(zip(patches, JUDGE, strict=True)))

    report = agreement_report(dataset, runs=[run], sampling=Sampling(resamples=50))
    assert report.dimensions is not None
    [section] = report.dimensions
    matrix = np.array([[np.nan if r is None else r for r in row] for row in HUMANS]).T
    alpha = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=range(1, 6)
    )
    assert section.alpha.value == pytest.approx(alpha)
    assert (section.ratings, section.raters, section.patches, section.pairs) == (19, 3, 7, 3)
    [judged] = section.judges
    medians = [statistics.median_low([r for r in row if r is not None]) for row in HUMANS]
    pairs = [(j, m) for j, m in zip(JUDGE, medians, strict=True) if j is not None]
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    assert judged.patches == 6
    assert judged.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(first, second, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert judged.spearman.value == pytest.approx(spearmanr(first, second).statistic)
    # By patch source: agent-a has the even patches.
    assert [g.group for g in section.by_source] == list(SOURCES)
    by_a = section.by_source[0]
    assert by_a.patches == 4
    assert by_a.alpha.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=matrix[:, ::2], level_of_measurement="ordinal",
            value_domain=range(1, 6),
        )
    )  # fmt: skip
    even = [(j, m) for j, m in list(zip(JUDGE, medians, strict=True))[::2] if j is not None]
    assert by_a.judges[0].spearman.value == pytest.approx(
        spearmanr([p[0] for p in even], [p[1] for p in even]).statistic
    )

    url = reverse("judging:report", args=[dataset.slug])
    html = lead_client.get(url + f"?runs=1&run={run.pk}&section=human_judge").content.decode()
    assert "Dimension: maintainability" in html
    assert '<tr data-source="agent-b">' in html
    assert f'data-run="{run.pk}" data-member="{member}"' in html
    exported = json.loads(lead_client.get(url + f"?runs=1&run={run.pk}&format=json").content)
    [dimension] = exported["dimensions"]
    assert dimension["alpha_ordinal"]["value"] == pytest.approx(alpha)
    assert dimension["judges"][0]["member"] == member
    assert AgreementReportOut.model_validate(exported).model_dump(mode="json") == exported
    csv = lead_client.get(url + f"?runs=1&run={run.pk}&format=csv").content.decode()
    assert "dimension maintainability,alpha ordinal,annotators," in csv
    # The run is the offline heuristic's: its judge's rows say so, on the page and in the CSV.
    assert f"spearman rho vs median,Run {run.pk} ({OFFLINE_MARKER}) {member}," in csv
    judge_row = html.split(f'data-member="{member}"')[1].split("</th>")[0]
    assert '<span class="tag offline"' in judge_row
    assert "dimension maintainability by source,alpha ordinal,agent-a," in csv
    assert exported["dimensions"][0]["by_source"][1]["source"] == "agent-b"


def test_a_run_read_before_a_campaign_rated_dimensions_shows_its_judge_once_one_does(
    annotator: User,
) -> None:
    """The report keeps a run's verdicts while none changes; a campaign rating dimensions
    since (the written judge's ratings were there all along) reads them again."""
    dataset = DatasetFactory(name="Rated later", slug="rated-later")
    bug = BugFactory(dataset=dataset)
    patches = [PatchFactory(bug=bug, diff=make_diff(new=f"w = {n}")) for n in range(3)]
    member = "nonfunctional@1"
    run = written_rating_run(dataset, member, {patch: n + 1 for n, patch in enumerate(patches)})
    assert agreement_report(dataset, runs=[run], sampling=Sampling(resamples=20)).dimensions == []

    people = [annotator, make_annotator("rater-2")]
    campaign = create_campaign(dataset, people, dimensions=[Dimension("maintainability", 1, 5)])
    for n, patch in enumerate(patches):
        for person in people:
            annotation_record(
                campaign=campaign, annotator=person, patch=patch, label=Label.VALID,
                ratings={"maintainability": n + 1},
            )  # fmt: skip
    report = agreement_report(dataset, runs=[run], sampling=Sampling(resamples=20))
    [section] = report.dimensions or []
    assert [(judge.member, judge.patches) for judge in section.judges] == [(member, 3)]
