"""The human section of the agreement report on the 950 real labels of defects4j-le2019.

The expected α and Fleiss' κ are built here straight from the JSONL with the ``krippendorff``
package and statsmodels, not through the app's code. The page's speed is measured by
``bench/agreement_report.py``, not here.
"""

import json
from collections import Counter, defaultdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from statsmodels.stats.inter_rater import fleiss_kappa

from judging.agreement import gwet_ac1
from judging.models import JudgingRun, PatchJudgment
from judging.reports.humans import B_CLEAR, B_FULL, LABELLED
from judging.reports.selectors import agreement_report
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset
from tests.judging.reports.helpers import whole_page

pytestmark = pytest.mark.django_db
CODES = {"VALID": 1, "INVALID": 0}


def _labels(bundle: Path) -> dict[str, dict[str, str]]:
    labels: dict[str, dict[str, str]] = defaultdict(dict)
    for line in bundle.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "label":
            labels[record["patch"]][record["annotator"]] = record["label"]
    return labels


@pytest.fixture
def le2019(le2019_bundle: Path) -> Dataset:
    with le2019_bundle.open("rb") as f:
        return bundle_import(source=f, dataset_name="defects4j-le2019", actor=None).dataset


def test_the_human_section_matches_the_libraries_on_the_raw_labels(
    le2019: Dataset, le2019_bundle: Path
) -> None:
    raw = _labels(le2019_bundle)
    raters = sorted({rater for labels in raw.values() for rater in labels})
    patches = sorted(raw)
    matrix = np.array(
        [[CODES.get(raw[patch].get(rater, ""), np.nan) for patch in patches] for rater in raters]
    )
    expected_alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    decisive = {p: [v for v in raw[p].values() if v != "UNSURE"] for p in patches}
    sizes = Counter(len(labels) for labels in decisive.values() if len(labels) >= 2)
    k = max(sizes, key=lambda size: (sizes[size], size))
    table = [[labels.count("VALID"), labels.count("INVALID")]
             for labels in decisive.values() if len(labels) == k]  # fmt: skip
    unanimous = sum(len(v) >= 2 and len(set(v)) == 1 for v in decisive.values())

    with CaptureQueriesContext(connection) as queries:
        report = agreement_report(le2019, runs=[])
    assert report.humans is not None

    labelled = report.humans.column(LABELLED)
    assert {label: figure.value for label, figure in labelled.labels.items()} == {
        "VALID": 156, "INVALID": 671, "UNSURE": 123,
    }  # fmt: skip
    assert labelled.patches.value == 150
    assert labelled.bugs.value == 100
    assert len(report.annotators) == 37
    assert labelled.alpha.value == pytest.approx(expected_alpha, abs=1e-12)
    assert labelled.fleiss_labels == k == 6
    assert labelled.fleiss.n == len(table) == 63
    assert labelled.fleiss.value == pytest.approx(fleiss_kappa(np.array(table)), abs=1e-12)
    assert labelled.unanimous_count == unanimous
    assert labelled.alpha.ci is not None
    assert labelled.alpha.value is not None
    lo, hi = labelled.alpha.ci
    assert lo < labelled.alpha.value < hi
    # Nobody has adjudicated: B_full is the unanimous patches, and on them α is 1.
    assert report.humans.column(B_FULL).patches.value == unanimous
    assert report.humans.column(B_CLEAR).alpha.value == pytest.approx(1.0)
    # AC1 over the same raters × patches (UNSURE missing), by the plain multi-rater form.
    rows = [[raw[patch].get(rater) if raw[patch].get(rater) != "UNSURE" else None
             for patch in patches] for rater in raters]  # fmt: skip
    assert labelled.ac1.value == pytest.approx(gwet_ac1(rows), abs=1e-12)
    assert len(queries) < 10


def _runs(dataset: Dataset) -> list[JudgingRun]:
    """Two runs by hand: the repair tools' authors' own labels (a judge of sorts), and the
    opposite of them on every third patch; no model is called."""
    runs = []
    for number, context in enumerate(("golden", "reference")):
        run = JudgingRun.objects.create(
            dataset=dataset, strategies=["rubric"] if number == 0 else ["s1b", "s2"],
            context=context, provider="offline", model="offline",
            status=JudgingRun.Status.FINISHED,
        )  # fmt: skip
        judgments = []
        for index, patch in enumerate(dataset.patches.order_by("key")):
            valid = patch.metadata.get("author_label") == "correct"
            if number and index % 3 == 0:
                valid = not valid
            verdict = "VALID" if valid else "INVALID"
            judgments.append(PatchJudgment(run=run, patch=patch, status="done", verdict=verdict))
        PatchJudgment.objects.bulk_create(judgments)
        runs.append(run)
    return runs


def test_the_page_with_two_runs_renders_every_section(le2019: Dataset, lead_client: Client) -> None:
    runs = _runs(le2019)
    url = reverse("judging:report", args=[le2019.slug])
    query = "?" + "&".join(f"run={run.pk}" for run in runs)
    page = whole_page(lead_client, url + query)
    for element in ("human-summary", "judge-table", "human-judge-table", "breakdown-source"):
        assert f'id="{element}"' in page, element
    assert page.count("<svg") >= 4  # annotators, RQ2, a heatmap and a reliability diagram
    section = lead_client.get(url + query + "&section=judges")
    report = section.context["report"]
    assert [column.benchmarks[B_FULL].n for column in report.judges] == [93, 93]
    data = json.loads(lead_client.get(url + query + "&format=json").content)
    assert data["humans"]["columns"]["labelled"]["labels"] == {
        "VALID": 156, "INVALID": 671, "UNSURE": 123,
    }  # fmt: skip
    assert len(data["human_judge"][0]["judge_annotator"]) == 37


def test_the_majority_rule_leaves_fewer_patches_to_adjudicate(
    le2019: Dataset, le2019_bundle: Path
) -> None:
    # Counted here from the JSONL: a patch waits under the unanimous rule unless ≥ 2
    # decisive labels all agree; under the majority rule, unless that, or ≥ 3 decisive
    # labels with two thirds agreeing.
    waiting = {"unanimous": 0, "majority": 0}
    for labels in _labels(le2019_bundle).values():
        decisive = [label for label in labels.values() if label != "UNSURE"]
        top = max(Counter(decisive).values(), default=0)
        unanimous = len(decisive) >= 2 and top == len(decisive)
        waiting["unanimous"] += not unanimous
        waiting["majority"] += not (
            unanimous or (len(decisive) >= 3 and 3 * top >= 2 * len(decisive))
        )
    assert waiting["unanimous"] == 57
    for rule, expected in waiting.items():
        le2019.consensus_rule = rule
        le2019.save()
        report = agreement_report(le2019, runs=[], sections=["humans"])
        assert report.humans is not None
        labelled = report.humans.column(LABELLED)
        assert labelled.awaiting.value == expected, rule
        assert report.humans.unanimous_only is (rule == "unanimous")
    assert waiting["majority"] < waiting["unanimous"]
