"""Edit analytics (paper 004, §4.2.1, §5.1): metrics against hand-computed values, the report,
its command, its page and its chart."""

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from rubrics.analytics import (
    EMPTY_DRAFT,
    CdfPoint,
    RubricEdits,
    cdf_points,
    dataset_rubric_report,
    edit_distance,
    edit_types,
    normalized_edit_distance,
    revision_metrics,
    rubric_report_data,
)
from rubrics.models import Dataset, Rubric, RubricRevision, Theme
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import rubric_confirm, rubric_revise, rubric_submit
from rubrics.selectors import UNKNOWN_DATASET
from rubrics.templatetags.charts import cdf_svg, x_ticks
from rubrics.templatetags.charts import number as number_filter
from rubrics.templatetags.charts import percent as percent_filter
from tests.rubrics.factories import BugFactory, DatasetFactory

ALL_THEMES = [theme.value for theme in Theme]


# -- metrics of one revision ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft", "revision", "distance", "normalized", "kinds"),
    [
        # Nothing changed.
        ("abc\ndef\n", "abc\ndef\n", 0, 0.0, set()),
        # f → g: one substitution, 1/8; line "def" replaced by "deg".
        ("abc\ndef\n", "abc\ndeg\n", 1, 0.125, {"modification"}),
        # "def\n" deleted: 4 deletions, 4/8; one line deleted.
        ("abc\ndef\n", "abc\n", 4, 0.5, {"deletion"}),
        # "ghi\n" inserted: 4 insertions, 4/8; one line inserted.
        ("abc\ndef\n", "abc\ndef\nghi\n", 4, 0.5, {"addition"}),
        # a,b,c → x,y,z (3, none of them occurs in the revision) + "ghi\n" (4) = 7, 7/8.
        ("abc\ndef\n", "xyz\ndef\nghi\n", 7, 0.875, {"modification", "addition"}),
        # Characters: a→b, b→c, c→d at the same places = 3, 3/6.
        # Lines: "a" deleted at the top, "d" added at the bottom.
        ("a\nb\nc\n", "b\nc\nd\n", 3, 0.5, {"deletion", "addition"}),
        # The textbook case: k→s, e→i, +g = 3, 3/6; the single line is replaced.
        ("kitten", "sitting", 3, 0.5, {"modification"}),
        # Two "\r" deleted = 2, 2/6; the lines are the same once their endings are dropped.
        ("a\r\nb\r\n", "a\nb\n", 2, 2 / 6, set()),
        # Lines: Levenshtein writes "a" → "x" replaced and "b", "c" deleted, one block of
        # changed lines: one modification, not a modification plus a deletion.
        # Characters: a→x + 4 deletions = 5, 5/6.
        ("a\nb\nc\n", "x\n", 5, 5 / 6, {"modification"}),
        # Lines: Levenshtein writes "xyz" inserted, then "abc" → "ghi" replaced: one block,
        # one modification. Characters: 3 substitutions + "ghi\n" = 7, 7/4.
        ("abc\n", "xyz\nghi\n", 7, 1.75, {"modification"}),
        # Where Levenshtein's line alignment differs from SequenceMatcher's, which this
        # used to read (item 3 of issue 13):
        # - the first line changed. SequenceMatcher matched the draft's first "a" with the
        #   revision's second and read an addition and a deletion. Characters: a→b = 1, 1/4.
        ("a\na\n", "b\na\n", 1, 0.25, {"modification"}),
        # - "a" deleted, "c" added after "b". Two substitutions cost Levenshtein what a
        #   deletion and an addition do, and it takes the substitutions: one modification,
        #   where SequenceMatcher matched "b" and read {deletion, addition}. (The rendered
        #   diff still shows "b" unchanged: test_textdiff.) Characters: a→b, b→c = 2, 2/4.
        ("a\nb\n", "b\nc\n", 2, 0.5, {"modification"}),
    ],
)
def test_metrics_of_a_revision_against_hand_computed_values(
    draft: str, revision: str, distance: int, normalized: float, kinds: set[str]
) -> None:
    assert edit_distance(draft, revision) == distance
    assert normalized_edit_distance(draft, revision) == pytest.approx(normalized)
    assert edit_types(draft, revision) == kinds
    metrics = revision_metrics(draft, revision)
    assert (metrics.distance, metrics.edit_types) == (distance, kinds)
    assert metrics.normalized == pytest.approx(normalized)


def test_a_revision_can_be_further_than_the_draft_is_long() -> None:
    # "ab" → "abcdef": 4 insertions over a draft of 2 characters = 2.0.
    assert normalized_edit_distance("ab", "abcdef") == 2.0


def test_edit_types_come_in_a_fixed_order() -> None:
    metrics = revision_metrics("abc\ndef\n", "xyz\ndef\nghi\n")
    assert metrics.edit_types_ordered == ("addition", "modification")


def test_an_empty_draft_has_no_length_to_normalize_by() -> None:
    with pytest.raises(ValueError, match="normalized_edit_distance: the draft is empty"):
        normalized_edit_distance("", "abc")
    with pytest.raises(ValueError, match="revision_metrics: the draft is empty"):
        revision_metrics("", "")
    assert EMPTY_DRAFT.format(function="f").startswith("f: ")


# -- the report over many rubrics -----------------------------------------------------------

# Four drafted rubrics, three of them golden:
#   A "abcdef\n" (7) golden unchanged:            0, 0/7 = 0.0, no edit type, no theme
#   B "abc\ndef\n" (8) → "abc\n":                  4, 4/8 = 0.5, deletion, superfluous
#   C "abcd\nefgh\n" (10) → "abcd\nefgX\n":        1, 1/10 = 0.1, modification,
#                                                  superfluous + hallucination
#   D "ab\n" (3) not golden (its "scope" theme does not count)
REPORT_RUBRICS = [
    ("abcdef\n", "abcdef\n", set()),
    ("abc\ndef\n", "abc\n", {"superfluous"}),
    ("abcd\nefgh\n", "abcd\nefgX\n", {"superfluous", "hallucination"}),
    ("ab\n", None, {"scope"}),
]


def test_the_report_over_four_rubrics_against_hand_computed_values() -> None:
    report = rubric_report_data(REPORT_RUBRICS)

    assert (report.rubric_count, report.golden_count, report.modified_count) == (4, 3, 2)
    assert report.modification_rate == pytest.approx(2 / 3)  # B and C of A, B, C
    # Draft lengths 3, 7, 8, 10 (every draft): median (7 + 8) / 2, mean 28 / 4.
    assert (report.draft_length_median, report.draft_length_mean) == (7.5, 7.0)
    # Distances 0, 1, 4: median 1, mean 5 / 3, max 4.
    assert report.distance_median == 1
    assert report.distance_mean == pytest.approx(5 / 3)
    assert report.distance_max == 4
    # Normalized 0.0, 0.1, 0.5: median 0.1, mean 0.6 / 3 = 0.2, max 0.5.
    assert report.normalized_median == pytest.approx(0.1)
    assert report.normalized_mean == pytest.approx(0.2)
    assert report.normalized_max == pytest.approx(0.5)
    assert report.edit_type_counts == {"addition": 0, "deletion": 1, "modification": 1}
    counts = {t.theme: t.count for t in report.theme_counts}
    assert counts == {
        "superfluous": 2,
        "overfitting": 0,
        "hallucination": 1,
        "scope": 0,
        "standardization": 0,
        "other": 0,
    }
    assert [t.theme for t in report.theme_counts] == ALL_THEMES
    assert report.theme_counts[0].label == "Removing superfluous constraints"
    # One golden rubric at ≤ 0.0, two at ≤ 0.1, all three at ≤ 0.5.
    assert report.cdf == (
        CdfPoint(0.0, pytest.approx(1 / 3)),
        CdfPoint(0.1, pytest.approx(2 / 3)),
        CdfPoint(0.5, 1.0),
    )


def test_cdf_points_merge_ties_into_the_share_at_or_below() -> None:
    # Sorted 0.0, 0.5, 0.5, 1.0: ≤ 0.0 is 1/4, ≤ 0.5 is 3/4, ≤ 1.0 is 4/4.
    assert cdf_points([0.5, 0.0, 0.5, 1.0]) == (
        CdfPoint(0.0, 0.25),
        CdfPoint(0.5, 0.75),
        CdfPoint(1.0, 1.0),
    )
    assert cdf_points([]) == ()


def test_with_no_golden_rubric_the_edit_statistics_are_none() -> None:
    report = rubric_report_data([RubricEdits("abc\n", None, frozenset({"scope"}))])

    assert (report.rubric_count, report.golden_count, report.modified_count) == (1, 0, 0)
    assert not report.has_golden
    assert (report.draft_length_median, report.draft_length_mean) == (4.0, 4.0)
    assert report.modification_rate is None
    assert report.distance_median is report.distance_mean is report.distance_max is None
    assert report.normalized_median is report.normalized_mean is report.normalized_max is None
    assert report.edit_type_counts == {"addition": 0, "deletion": 0, "modification": 0}
    assert all(t.count == 0 for t in report.theme_counts)
    assert report.cdf == ()
    assert rubric_report_data([]).draft_length_median is None


# -- a dataset's report ---------------------------------------------------------------------


def make_rubric(
    dataset: Dataset,
    key: str,
    revisions: list[tuple[str, list[str]]],
    *,
    golden: int | None,
    variant: str = Rubric.Variant.TEMPLATED,
) -> Rubric:
    """A rubric with exactly these texts and themes; ``golden`` is the confirmed number."""
    bug = dataset.bugs.filter(key=key).first() or BugFactory(dataset=dataset, key=key)
    rubric = Rubric.objects.create(bug=bug, variant=variant, current_number=len(revisions) - 1)
    for number, (text, themes) in enumerate(revisions):
        RubricRevision.objects.create(
            rubric=rubric,
            number=number,
            text=text,
            structure={"text": text},
            author="llm:offline/heuristic-v1" if number == 0 else "reviewer",
            justification="" if number == 0 else "because",
            themes=themes,
        )
    if golden is not None:
        rubric.golden_revision = rubric.revisions.get(number=golden)
    at_golden = golden is not None and golden == len(revisions) - 1
    rubric.status = Rubric.Status.GOLDEN if at_golden else Rubric.Status.IN_REVIEW
    rubric.save()
    return rubric


@pytest.fixture
def report_dataset(db: None) -> Dataset:
    """The four rubrics of ``REPORT_RUBRICS`` as revisions, plus ones the report leaves out.

    B reaches "abc\\n" in two steps (themes hallucination, then superfluous); C's golden
    revision is r1 and a later edit (theme scope) awaits confirmation, so C is measured at
    r1; D is in review at r1 (+"cd\\n": 3 insertions, 3/3 = 1.0, an addition).
    """
    dataset = DatasetFactory(name="Report set", slug="report-set")
    make_rubric(dataset, "BUG-1", [("abcdef\n", [])], golden=0)
    make_rubric(
        dataset,
        "BUG-2",
        [("abc\ndef\n", []), ("abc\ndeX\n", ["hallucination"]), ("abc\n", ["superfluous"])],
        golden=2,
    )
    make_rubric(
        dataset,
        "BUG-3",
        [
            ("abcd\nefgh\n", []),
            ("abcd\nefgX\n", ["superfluous"]),
            ("abcd\nefgX\nmore\n", ["scope"]),
        ],
        golden=1,
    )
    make_rubric(dataset, "BUG-4", [("ab\n", []), ("ab\ncd\n", ["other"])], golden=None)
    Rubric.objects.create(bug=BugFactory(dataset=dataset, key="BUG-5"))  # still drafting
    make_rubric(dataset, "BUG-1", [("free\n", [])], golden=0, variant=Rubric.Variant.FREE_FORM)
    return dataset


def test_a_dataset_report_reads_golden_revisions_and_the_themes_up_to_them(
    report_dataset: Dataset,
) -> None:
    report = dataset_rubric_report(report_dataset)
    summary = report.summary

    assert report.undrafted_count == 1  # BUG-5
    assert (summary.rubric_count, summary.golden_count, summary.modified_count) == (4, 3, 2)
    assert (summary.draft_length_median, summary.draft_length_mean) == (7.5, 7.0)
    assert (summary.distance_median, summary.distance_max) == (1, 4)
    assert summary.normalized_mean == pytest.approx(0.2)
    assert summary.edit_type_counts == {"addition": 0, "deletion": 1, "modification": 1}
    # B: hallucination + superfluous; C: superfluous only (its scope edit is not golden yet).
    counts = {t.theme: t.count for t in summary.theme_counts}
    assert (counts["superfluous"], counts["hallucination"], counts["scope"]) == (2, 1, 0)
    assert counts["other"] == 0  # D is not golden

    rows = {row.bug_key: row for row in report.rows}
    assert list(rows) == ["BUG-1", "BUG-2", "BUG-3", "BUG-4"]
    b, c, d = rows["BUG-2"], rows["BUG-3"], rows["BUG-4"]
    assert (b.compared_number, b.golden, b.revision_count, b.metrics.distance) == (2, True, 3, 4)
    assert b.themes == ("hallucination", "superfluous")
    assert (c.status, c.compared_number, c.golden, c.metrics.distance) == ("in_review", 1, True, 1)
    assert c.themes == ("superfluous",)
    assert (d.compared_number, d.golden, d.metrics.distance, d.metrics.normalized) == (
        1,
        False,
        3,
        1.0,
    )
    assert d.metrics.edit_types_ordered == ("addition",)
    assert d.theme_labels == ("Other",)


def test_the_free_form_variant_has_its_own_report(report_dataset: Dataset) -> None:
    summary = dataset_rubric_report(report_dataset, variant=Rubric.Variant.FREE_FORM).summary
    assert (summary.rubric_count, summary.golden_count, summary.modification_rate) == (1, 1, 0.0)
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        dataset_rubric_report(report_dataset, variant="nope")


def test_a_dataset_report_costs_three_queries_whatever_its_size(
    db: None, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    dataset = DatasetFactory()
    for i in range(10):
        make_rubric(
            dataset,
            f"BUG-{i}",
            [("abc\ndef\n", []), ("abc\n", ["superfluous"]), ("abc\nxyz\n", ["scope"])],
            golden=2 if i % 2 else None,
        )
    with django_assert_max_num_queries(3):
        report = dataset_rubric_report(dataset)
    assert (report.summary.rubric_count, report.summary.golden_count) == (10, 5)
    assert report.summary.theme_counts[0].count == 5


def test_a_draft_revised_and_confirmed_through_the_services_shows_in_the_report(
    reviewer: User, reviewer2: User
) -> None:
    bug = BugFactory()
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk)
    draft = rubric.revisions.get(number=0)
    structure = dict(draft.structure, root_cause="f() returns 1 where 2 is expected.")
    revision = rubric_revise(
        rubric=rubric,
        base_number=0,
        structure=structure,
        justification="the draft's root cause was vague",
        themes=["hallucination"],
        actor=reviewer,
    )
    rubric_submit(rubric=rubric, base_number=1, actor=reviewer)
    rubric_confirm(rubric=rubric, base_number=1, actor=reviewer2)

    report = dataset_rubric_report(bug.dataset)
    (row,) = report.rows
    assert (row.status, row.compared_number, row.golden) == ("golden", 1, True)
    assert row.metrics == revision_metrics(draft.text, revision.text)
    assert row.metrics.distance > 0
    assert report.summary.modification_rate == 1.0
    assert {t.theme: t.count for t in report.summary.theme_counts}["hallucination"] == 1


# -- the command ----------------------------------------------------------------------------


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("rubric_report", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_command_prints_the_report_as_json(report_dataset: Dataset) -> None:
    data = json.loads(run("--dataset", "Report set", "--format", "json"))

    assert (data["dataset"], data["slug"], data["variant"]) == (
        "Report set",
        "report-set",
        "templated",
    )
    summary = data["summary"]
    assert (summary["rubric_count"], summary["golden_count"], summary["modified_count"]) == (
        4,
        3,
        2,
    )
    assert summary["modification_rate"] == pytest.approx(2 / 3)
    assert summary["distance_mean"] == pytest.approx(5 / 3)
    assert summary["normalized_median"] == pytest.approx(0.1)
    assert summary["edit_types"] == {"addition": 0, "deletion": 1, "modification": 1}
    assert summary["themes"][0] == {
        "theme": "superfluous",
        "label": "Removing superfluous constraints",
        "count": 2,
    }
    assert [point["share"] for point in summary["cdf"]] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert data["rubrics"][1] == {
        "bug": "BUG-2",
        "status": "golden",
        "revisions": 3,
        "compared_revision": 2,
        "golden": True,
        "distance": 4,
        "normalized": 0.5,
        "edit_types": ["deletion"],
        "themes": ["hallucination", "superfluous"],
    }
    assert json.loads(run("--dataset", "report-set"))["summary"] == summary  # json by default
    free = json.loads(run("--dataset", "report-set", "--variant", "free_form"))
    assert free["summary"]["golden_count"] == 1


def test_the_command_prints_a_readable_text_report(report_dataset: Dataset) -> None:
    out = run("--dataset", "report-set", "--format", "text")
    assert "Rubric report: Report set (report-set), templated rubrics" in out
    assert "(1 without a draft yet)" in out
    assert "2 of 3 golden (66.7%)" in out
    assert "7.5 / 7.0" in out  # draft length median / mean
    assert "1.0 / 1.7 / 4" in out  # edit distance: median and mean are floats, max an int
    assert "0.10 / 0.20 / 0.50" in out  # normalized
    assert "addition 0, deletion 1, modification 1" in out
    assert "BUG-3  in review              r1 golden" in out


def test_the_command_says_when_there_is_no_golden_rubric_and_refuses_unknown_datasets(
    db: None,
) -> None:
    make_rubric(DatasetFactory(name="Fresh"), "BUG-1", [("abc\n", [])], golden=None)
    assert "No golden rubrics yet" in run("--dataset", "Fresh", "--format", "text")
    data = json.loads(run("--dataset", "Fresh"))
    assert data["summary"]["note"] == "no golden rubrics yet"
    assert data["summary"]["modification_rate"] is None
    with pytest.raises(CommandError, match=re.escape(UNKNOWN_DATASET.format(name="ghost"))):
        run("--dataset", "ghost")


# -- the page -------------------------------------------------------------------------------


def report_url(dataset: Dataset, query: str = "") -> str:
    return reverse("rubrics:rubric_report", args=[dataset.slug]) + query


def test_leads_and_reviewers_read_the_report_annotators_get_403(
    lead_client: Client,
    reviewer_client: Client,
    annotator_client: Client,
    report_dataset: Dataset,
) -> None:
    for client in (lead_client, reviewer_client):
        response = client.get(report_url(report_dataset))
        assert response.status_code == 200
        html = response.content.decode()
        assert '<svg class="chart"' in html
        assert 'aria-labelledby="cdf-title cdf-desc"' in html
        assert "66.7%" in html
        assert "Removing superfluous constraints" in html
        assert reverse("rubrics:rubric_edit", args=["report-set", "BUG-2", "templated"]) in html
    assert annotator_client.get(report_url(report_dataset)).status_code == 403
    detail = lead_client.get(reverse("rubrics:dataset_detail", args=["report-set"]))
    assert report_url(report_dataset) in detail.content.decode()


def test_the_page_offers_the_same_data_as_json(
    lead_client: Client, report_dataset: Dataset
) -> None:
    response = lead_client.get(report_url(report_dataset, "?format=json"))
    assert response["Content-Type"] == "application/json"
    assert "report-set-rubric-report-templated.json" in response["Content-Disposition"]
    expected = json.loads(run("--dataset", "report-set"))
    assert json.loads(response.content) == expected


def test_the_page_switches_variant_and_refuses_unknown_ones(
    lead_client: Client, report_dataset: Dataset
) -> None:
    free = lead_client.get(report_url(report_dataset, "?variant=free_form"))
    assert free.status_code == 200
    assert free.context["report"].variant == "free_form"
    bad = lead_client.get(report_url(report_dataset, "?variant=<b>x</b>"))
    assert bad.status_code == 400
    assert bad["Content-Type"].startswith("text/plain")


def test_the_page_says_when_there_is_no_golden_rubric(lead_client: Client, db: None) -> None:
    dataset = DatasetFactory()
    make_rubric(dataset, "BUG-1", [("abc\n", [])], golden=None)
    html = lead_client.get(report_url(dataset)).content.decode()
    assert "No golden rubrics yet" in html
    assert "<svg" in html


def test_the_page_costs_the_same_queries_for_1_and_10_rubrics(
    lead_client: Client, db: None
) -> None:
    def queries(size: int) -> int:
        dataset = DatasetFactory()
        for i in range(size):
            make_rubric(dataset, f"B-{i}", [("abc\n", []), ("abd\n", ["other"])], golden=1)
        lead_client.get(report_url(dataset))  # warm the session and role caches
        with CaptureQueriesContext(connection) as captured:
            assert lead_client.get(report_url(dataset)).status_code == 200
        return len(captured)

    assert queries(1) == queries(10)


# -- the chart ------------------------------------------------------------------------------


def parse_svg(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output, parsed to prove it well-formed


def test_x_ticks_cover_the_largest_value() -> None:
    assert x_ticks(0.0) == x_ticks(0.5) == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert x_ticks(1.3) == (0.0, 0.5, 1.0, 1.5)
    assert x_ticks(7.0) == (0.0, 2.0, 4.0, 6.0, 8.0)  # step ceil(7 / 6) = 2


def test_the_cdf_chart_is_a_step_line_in_well_formed_svg() -> None:
    points = rubric_report_data(REPORT_RUBRICS).cdf
    svg = cdf_svg(points, title="CDF <of> edits", desc="three & more", median=0.1)

    root = parse_svg(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    assert root.find("svg:title", ns).text == "CDF <of> edits"  # escaped, then parsed back
    assert root.find("svg:desc", ns).text == "three & more"
    # Plot area: x from 64 over 476 px for 0..1; y from 268 (0%) up 252 px to 16 (100%).
    # (0.0, 1/3) → (64, 184); (0.1, 2/3) → (111.6, 100); (0.5, 1) → (302, 16); end at x = 1.
    step = root.find("svg:path", ns).get("d")
    assert step == "M64.0 268.0 H64.0 V184.0 H111.6 V100.0 H302.0 V16.0 H540.0"
    assert len(root.findall("svg:circle", ns)) == 3
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"0%", "50%", "100%", "0", "0.2", "1", "median 0.10"} <= set(texts)
    assert "Normalized edit distance" in texts


def test_an_empty_cdf_chart_says_so() -> None:
    svg = cdf_svg((), title="t", desc="d")
    parse_svg(svg)
    assert "No golden rubrics yet" in svg
    assert "<path" not in svg


def test_number_and_percent_filters() -> None:
    assert (
        number_filter(None),
        number_filter(1234),
        number_filter(1.6667, 1),
        number_filter(0.2),
    ) == (
        "–",
        "1,234",
        "1.7",
        "0.20",
    )
    assert (percent_filter(None), percent_filter(2 / 3), percent_filter(0.5, 0)) == (
        "–",
        "66.7%",
        "50%",
    )
