"""The agreement report pages: leads only, the scope form, and the JSON and CSV exports."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.annotations.selectors import UNKNOWN_CAMPAIGN
from judging.models import Assignment, Calibration, Campaign, JudgingRun
from judging.reports import read_cache
from judging.reports.selectors import FOREIGN_RUN
from sejury_web.llm import OFFLINE_MARKER
from tests.judging.reports.factories import Small, add_patches
from tests.judging.reports.helpers import whole_page
from tests.rubrics.factories import DatasetFactory

pytestmark = pytest.mark.django_db


def report_url(small: Small, query: str = "") -> str:
    return reverse("judging:report", args=[small.dataset.slug]) + query


@pytest.mark.parametrize("client_name", ["annotator_client", "reviewer_client"])
def test_only_leads_see_reports(
    small: Small, client_name: str, request: pytest.FixtureRequest
) -> None:
    client: Client = request.getfixturevalue(client_name)
    for url in (
        reverse("judging:report_index"),
        report_url(small),
        report_url(small, "?format=json"),
        report_url(small, "?format=csv"),
    ):
        assert client.get(url).status_code == 403, url


def test_anonymous_visitors_see_no_report(small: Small, client: Client) -> None:
    assert client.get(report_url(small, "?format=json")).status_code in (302, 403)


def test_the_index_links_each_dataset(small: Small, lead_client: Client) -> None:
    response = lead_client.get(reverse("judging:report_index"))
    assert response.status_code == 200
    assert f'id="report-{small.dataset.slug}"' in response.content.decode()
    assert report_url(small) in response.content.decode()


def test_the_page_shows_every_table(small: Small, lead_client: Client) -> None:
    response = lead_client.get(report_url(small))
    assert response.status_code == 200
    # The newest finished run of each context, by default: both runs, golden first.
    assert response.context["shell"].runs == [small.golden, small.reference]
    page = whole_page(lead_client, report_url(small))
    for element in (
        "report-form",
        "human-summary",
        "human-annotators",
        "human-pairs",
        "judge-table",
        "judge-confusion",
        "human-judge-table",
        "breakdown-bug_type",
        "breakdown-source",
        "export-json",
        "export-csv",
    ):
        assert f'id="{element}"' in page, element
    assert "small sample" in page
    assert 'class="tag offline"' in page
    assert "Krippendorff" in page
    assert 'data-figure="alpha"' in page
    # The matrix names every annotator.
    for name in ("ann-a", "ann-b", "ann-c"):
        assert name in page


def test_the_lead_picks_runs_and_a_campaign(small: Small, lead_client: Client) -> None:
    campaign = Campaign.objects.create(dataset=small.dataset, name="Benchmark")
    for position, key in enumerate(("P1", "P2", "P3"), start=1):
        Assignment.objects.create(
            campaign=campaign,
            patch=small.patches[key],
            annotator=small.annotators["ann-a"],
            position=position,
        )
    query = f"?runs=1&run={small.reference.pk}&campaign={campaign.pk}"
    response = lead_client.get(report_url(small, query))
    assert response.status_code == 200
    shell = response.context["shell"]
    assert shell.runs == [small.reference]
    assert shell.campaign == campaign
    assert shell.patches_in_scope == 3
    section = lead_client.get(report_url(small, query + "&section=judges"))
    assert [run.run for run in section.context["report"].runs] == [small.reference]
    page = response.content.decode()
    assert f'id="report-run-{small.reference.pk}" checked' in page
    assert f'id="report-run-{small.golden.pk}">' in page  # listed, not ticked
    # The export links carry the same scope.
    assert (
        f'href="?campaign={campaign.pk}&amp;runs=1&amp;run={small.reference.pk}&amp;format=json"'
        in page
    )


def test_no_run_ticked_means_humans_only(small: Small, lead_client: Client) -> None:
    response = lead_client.get(report_url(small, "?runs=1"))
    assert response.status_code == 200
    assert response.context["shell"].runs == []
    assert "No run in the report" in whole_page(lead_client, report_url(small, "?runs=1"))


def test_a_foreign_or_unknown_run_or_campaign_is_a_400_that_says_why(
    small: Small, lead_client: Client
) -> None:
    other = DatasetFactory(name="Other", slug="other")
    foreign = JudgingRun.objects.create(
        dataset=other, strategies=["rubric"], context="golden", provider="openai", model="m"
    )
    response = lead_client.get(report_url(small, f"?run={foreign.pk}"))
    assert response.status_code == 400
    message = FOREIGN_RUN.format(run=foreign.pk, other=other, dataset=small.dataset)
    assert message in response.content.decode()
    response = lead_client.get(report_url(small, "?campaign=424242&format=json"))
    assert response.status_code == 400
    assert UNKNOWN_CAMPAIGN.format(campaign=424242) in response.content.decode()
    assert lead_client.get(report_url(small, "?format=xml")).status_code == 400
    assert lead_client.get(reverse("judging:report", args=["nope"])).status_code == 404


def test_json_export_is_one_document_with_sections(small: Small, lead_client: Client) -> None:
    response = lead_client.get(
        report_url(small, f"?run={small.golden.pk}&run={small.reference.pk}&format=json")
    )
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    data = json.loads(response.content)
    assert set(data) >= {
        "dataset",
        "runs",
        "humans",
        "judges",
        "human_judge",
        "breakdowns",
        "intervals",
        "consensus",
        "baselines",
        "routing",
        "valid_at_k",
    }
    assert data["dataset"]["slug"] == "small"
    # What routing buys, per run: 21 shares; all routed, the labels are the consensus.
    routing = {curve["run"]: curve for curve in data["routing"]}
    golden = routing[small.golden.pk]
    assert [point["share"] for point in golden["points"]][:3] == [0.0, 0.05, 0.1]
    assert golden["points"][-1]["accuracy"]["value"] == 1.0
    assert golden["points"][0]["accuracy"] == data["judges"][0]["benchmarks"]["b_full"]["accuracy"]
    assert data["valid_at_k"]["run"] == small.golden.pk
    alpha = data["humans"]["columns"]["labelled"]["alpha"]
    assert set(alpha) == {"value", "ci_lo", "ci_hi", "n", "small_sample"}
    assert alpha["n"] == 8
    assert alpha["small_sample"] is True
    assert alpha["ci_lo"] <= alpha["value"] <= alpha["ci_hi"]
    runs = {run["id"]: run for run in data["runs"]}
    assert runs[small.reference.pk]["offline"] is True
    assert runs[small.reference.pk]["note"] == OFFLINE_MARKER
    assert runs[small.golden.pk]["offline"] is False
    golden = data["judges"][0]
    assert golden["run"] == small.golden.pk
    assert golden["benchmarks"]["b_full"]["n"] == 6
    assert golden["without_verdict"] == {"failed": 1}
    assert set(golden["benchmarks"]["b_full"]["confusion"]) == {"tp", "fp", "fn", "tn"}
    assert [row["group"] for row in data["breakdowns"]["source"]["rows"]] == ["tool-a", "tool-b"]
    pairs = data["humans"]["pairs"]["pairs"]
    assert {(pair["a"], pair["b"]) for pair in pairs} == {
        ("ann-a", "ann-b"), ("ann-a", "ann-c"), ("ann-b", "ann-c")
    }  # fmt: skip


def test_json_says_which_calibration_patches_are_left_out(
    small: Small, lead_client: Client
) -> None:
    campaign = Campaign.objects.create(dataset=small.dataset, name="Cal", purpose="calibration")
    Assignment.objects.create(
        campaign=campaign,
        patch=small.patches["P1"],
        annotator=small.annotators["ann-a"],
        position=1,
    )
    Calibration.objects.create(campaign=campaign, run=small.golden, team=["rubric"])
    data = json.loads(
        lead_client.get(report_url(small, f"?run={small.golden.pk}&format=json")).content
    )
    assert data["runs"][0]["calibration"]["patches_left_out"] == 1
    assert data["judges"][0]["calibration_patches_left_out"] == 1
    page = whole_page(lead_client, report_url(small, f"?run={small.golden.pk}"))
    assert "the 1 calibration patches are left out" in page


def test_csv_export_has_one_row_per_section_figure_and_column(
    small: Small, lead_client: Client
) -> None:
    response = lead_client.get(
        report_url(small, f"?run={small.golden.pk}&run={small.reference.pk}&format=csv")
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == [
        "section",
        "figure",
        "column",
        "value",
        "ci_lo",
        "ci_hi",
        "n",
        "small_sample",
    ]
    keys = [(row["section"], row["figure"], row["column"]) for row in rows]
    assert len(keys) == len(set(keys))
    by_key = dict(zip(keys, rows, strict=True))
    alpha = by_key[("humans", "alpha", "labelled")]
    assert float(alpha["ci_lo"]) <= float(alpha["value"]) <= float(alpha["ci_hi"])
    assert alpha["n"] == "8"
    assert alpha["small_sample"] == "small sample"
    assert by_key[("humans", "patches", "b_full")]["value"] == "7"
    assert by_key[("humans", "patches", "b_full")]["small_sample"] == ""
    golden = f"run {small.golden.pk}"
    assert by_key[("judges", "accuracy", f"{golden} b_full")]["n"] == "6"
    assert by_key[("judges", "without verdict: failed", golden)]["value"] == "1"
    offline = f"run {small.reference.pk} ({OFFLINE_MARKER})"
    assert ("judges", "kappa", f"{offline} b_clear") in by_key
    assert {row["section"] for row in rows} >= {
        "humans", "humans_vs_consensus", "human_pairs", "judges", "human_judge",
        "by_bug_type", "by_source",
    }  # fmt: skip


def test_csv_cells_from_imported_text_are_never_formulas(small: Small, lead_client: Client) -> None:
    # A bug type from an imported bundle names a breakdown group, which names CSV cells.
    small.dataset.bugs.filter(key="B1").update(bug_type='=HYPERLINK("http://x")')
    response = lead_client.get(report_url(small, f"?run={small.golden.pk}&format=csv"))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    groups = [row for row in rows if row["section"] == "by_bug_type"]
    assert groups
    assert not [cell for row in rows for cell in row.values() if cell.startswith(("=", "@"))]
    assert any(row["column"].startswith("'=HYPERLINK") for row in groups)


def test_the_page_costs_the_same_queries_at_any_size(small: Small, lead_client: Client) -> None:
    url = report_url(small, f"?run={small.golden.pk}&run={small.reference.pk}")
    whole_page(lead_client, url)  # the session and the user's roles, once
    read_cache.forget()  # both read, not one of them from what the other kept
    with CaptureQueriesContext(connection) as few:
        whole_page(lead_client, url)
    add_patches(small, 30)
    read_cache.forget()
    with CaptureQueriesContext(connection) as many:
        whole_page(lead_client, url)
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]


def test_a_page_counts_no_patch_of_the_dataset_and_reads_its_calibrations_once(
    small: Small, lead_client: Client
) -> None:
    """The page shows no bug or patch count (the dataset is read without them), and the
    runs of one dataset share its calibrations: one read for both."""
    url = report_url(small, f"?run={small.golden.pk}&run={small.reference.pk}")
    whole_page(lead_client, url)
    read_cache.forget()
    with CaptureQueriesContext(connection) as queries:
        whole_page(lead_client, url)
    sql = [query["sql"] for query in queries.captured_queries]
    dataset_reads = [q for q in sql if q.startswith('SELECT "rubrics_dataset"."id"')]
    assert dataset_reads, sql
    assert not [q for q in dataset_reads if "COUNT(" in q], dataset_reads
    calibrations = [q for q in sql if q.startswith('SELECT "judging_calibration"')]
    assert len(calibrations) == 1, calibrations


def test_a_dataset_without_labels_or_runs_still_has_a_page(lead_client: Client) -> None:
    empty = DatasetFactory(name="Empty", slug="empty")
    page = whole_page(lead_client, reverse("judging:report", args=[empty.slug]))
    assert "No labels on these patches yet" in page
    assert "has no judging run yet" in page
    data = json.loads(
        lead_client.get(reverse("judging:report", args=[empty.slug]) + "?format=json").content
    )
    assert data["humans"]["columns"]["labelled"]["alpha"]["value"] is None
    assert data["runs"] == []


def test_the_shell_pins_its_default_runs_in_every_link(small: Small, lead_client: Client) -> None:
    response = lead_client.get(report_url(small))
    page = response.content.decode()
    pinned = f"runs=1&amp;run={small.golden.pk}&amp;run={small.reference.pk}&amp;default_runs=1"
    assert page.count(f'hx-get="?{pinned}&amp;section=') == 4
    assert f'id="export-json" href="?{pinned}&amp;format=json"' in page
    assert f'id="export-csv" href="?{pinned}&amp;format=csv"' in page
    # A run finishing after the shell was drawn does not slip into its sections.
    JudgingRun.objects.create(
        dataset=small.dataset, strategies=["rubric"], context="golden", provider="offline",
        model="offline", status=JudgingRun.Status.FINISHED,
    )  # fmt: skip
    data = json.loads(lead_client.get(report_url(small, "?" + pinned.replace("&amp;", "&")
                                                  + "&format=json")).content)  # fmt: skip
    assert [run["id"] for run in data["runs"]] == [small.golden.pk, small.reference.pk]
    assert all(run["chosen_by_default"] for run in data["runs"])


def test_the_corrected_valid_rate_is_on_the_page_and_in_both_exports(
    small: Small, lead_client: Client
) -> None:
    """Golden's figures as ``test_reports`` works them out: Se = Sp = 2/3, tool-a's judged
    share 3/4 corrected to 5/4, clipped to 1; tool-b's 1/3 corrected to 0."""
    runs = f"?run={small.golden.pk}&run={small.reference.pk}"
    data = json.loads(lead_client.get(report_url(small, f"{runs}&format=json")).content)
    corrected = data["corrected_valid_rate"]
    assert corrected["run"] == small.golden.pk
    a, b = corrected["rows"]
    assert (a["source"], a["n_judged"], a["n_labelled"]) == ("tool-a", 4, 6)
    assert set(a) >= {"judged", "corrected", "sensitivity", "specificity"}
    assert a["judged"]["value"] == pytest.approx(0.75)
    assert a["sensitivity"]["value"] == pytest.approx(2 / 3)
    assert a["specificity"]["value"] == pytest.approx(2 / 3)
    assert (a["corrected"]["value"], a["corrected"]["clipped_to"]) == (1.0, "1")
    assert {"ci_lo", "ci_hi"} <= set(a["corrected"])
    assert b["corrected"]["value"] == pytest.approx(0.0, abs=1e-12)
    rows = csv.DictReader(
        io.StringIO(lead_client.get(report_url(small, f"{runs}&format=csv")).content.decode())
    )
    by_key = {(row["section"], row["figure"], row["column"]): row for row in rows}
    assert by_key[("corrected_valid_rate", "corrected", "tool-a")]["value"] == "1.0"
    assert by_key[("corrected_valid_rate", "n_judged", "tool-b")]["value"] == "3"
    assert float(by_key[("corrected_valid_rate", "sensitivity", "tool-b")]["value"]) == (
        pytest.approx(2 / 3)
    )
    page = whole_page(lead_client, report_url(small, runs))
    assert 'id="corrected-valid-rate-table"' in page
    assert "clipped to 1" in page
    assert f"verdict of run #{small.golden.pk}" in page
    # Six labels: J = 1/3, its interval reaching below 0, and the page says what that means.
    assert 'class="flash warn corrected-warning"' in page
    assert "the judge may be no better than chance" in page
