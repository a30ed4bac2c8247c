"""Why passing patches were rejected, in the agreement report's breakdowns: the themes of the
run valid@k reads, per patch source, against counts made here from the rows themselves; the
examples; what the section says before anything is sorted; the JSON and CSV; and the queries,
as many at any size."""

import csv
import io
import json
from collections import Counter

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import Assignment, Campaign, JudgingRun, PatchJudgment, RejectionTheme
from judging.reports.figures import Sampling
from judging.reports.rejections import EXAMPLES
from judging.reports.selectors import BREAKDOWN, agreement_report
from judging.reports.valid_at_k import NO_SOURCE
from judging.runs.rejections import PROMPT_VERSION
from rubrics.models import Patch
from tests.judging.reports.factories import Small, add_patches
from tests.judging.reports.helpers import present, whole_page

THEMES = ["violates_requirement", "root_cause", "incomplete", "new_issues", "other"]


def sort_by_hand(run: JudgingRun, themes: dict[str, str], **fields: object) -> None:
    """Rows as a worker would leave them: ``themes`` maps a patch key to a theme, or to
    "failed" / "pending"."""
    for key, theme in themes.items():
        judgment = PatchJudgment.objects.get(run=run, patch__key=key)
        status = theme if theme in ("failed", "pending") else "done"
        RejectionTheme.objects.update_or_create(
            judgment=judgment,
            defaults={
                "status": status,
                "theme": "" if status != "done" else theme,
                "rationale": f"RATIONALE of {key}" if status == "done" else "",
                "strategy": "rubric",
                "justification": f"justification of {key}",
                "prompt_version": PROMPT_VERSION,
                "error": "boom" if status == "failed" else "",
                **fields,
            },
        )


def expected_counts(run: JudgingRun) -> Counter[tuple[str, str]]:
    """(theme, source) → sorted patches, counted from the rows without the report's code."""
    counts: Counter[tuple[str, str]] = Counter()
    for row in RejectionTheme.objects.filter(judgment__run=run).select_related("judgment__patch"):
        patch = row.judgment.patch
        if row.status == "done" and row.judgment.verdict == "INVALID" and patch.tests_pass:
            counts[row.theme, patch.source or NO_SOURCE] += 1
    return counts


def rejecting(small: Small) -> None:
    """The golden run found P2, P3, P4 INVALID; give more patches a source-less twin and
    a patch whose tests fail, and sort them all (P1 was found VALID: its row is ignored)."""
    Patch.objects.filter(key="P3").update(source="")
    Patch.objects.filter(key="P4").update(tests_pass=False)
    PatchJudgment.objects.filter(run=small.golden, patch__key__in=["P5", "P6"]).update(
        verdict="INVALID", score=0.0
    )
    sort_by_hand(
        small.golden,
        {
            "P1": "other",  # found VALID
            "P2": "root_cause",
            "P3": "root_cause",
            "P4": "incomplete",  # its tests fail
            "P5": "violates_requirement",
            "P6": "failed",
        },
    )


def test_the_table_counts_what_the_rows_say_per_source(small: Small) -> None:
    rejecting(small)
    report = agreement_report(
        small.dataset, runs=[small.golden, small.reference], sampling=Sampling(resamples=10)
    )
    themes = present(report.rejection_themes)
    assert themes.run.run == small.golden == present(report.valid_at_k_run).run
    expected = expected_counts(small.golden)
    assert sum(expected.values()) == 3  # P2, P3 and P5
    assert themes.sources == sorted({NO_SOURCE, "tool-a", "tool-b"})
    for row in themes.rows:
        assert row.total.patches == sum(
            n for (theme, _), n in expected.items() if theme == row.theme
        )
        for source, cell in row.cells:
            assert cell.patches == expected[row.theme, source], (row.theme, source)
    by_theme = {row.theme: row for row in themes.rows}
    assert [row.theme for row in themes.rows] == THEMES
    assert by_theme["root_cause"].total.share == 2 / 3
    assert dict(by_theme["root_cause"].cells)["tool-b"].share == 1.0  # P2 of tool-b's 1
    assert dict(by_theme["incomplete"].cells)["tool-a"].share == 0.0
    # Rejected passing patches: P2, P3, P5, P6 (P4's tests fail); P6's sorting failed.
    assert (themes.rejected, themes.sorted, themes.failed, themes.pending) == (4, 3, 1, 0)
    assert themes.unsorted == 0
    examples = {theme: [e.patch_key for e in chosen] for theme, _, chosen in themes.examples}
    assert examples == {"violates_requirement": ["P5"], "root_cause": ["P2", "P3"]}
    p2 = themes.examples[1][2][0]
    assert (p2.rationale, p2.strategy, p2.source) == ("RATIONALE of P2", "rubric", "tool-b")


def test_a_campaign_scope_counts_its_patches_only(small: Small) -> None:
    rejecting(small)
    campaign = Campaign.objects.create(dataset=small.dataset, name="Some")
    annotator = next(iter(small.annotators.values()))
    for position, key in enumerate(["P2", "P6"], start=1):
        Assignment.objects.create(
            campaign=campaign, patch=small.patches[key], annotator=annotator, position=position
        )
    report = agreement_report(
        small.dataset, campaign=campaign, runs=[small.golden], sections=[BREAKDOWN]
    )
    themes = present(report.rejection_themes)
    assert (themes.rejected, themes.sorted, themes.failed) == (2, 1, 1)


def test_examples_are_a_few_per_theme_in_patch_order(small: Small) -> None:
    add_patches(small, 6)  # more-6-0 … more-6-5: INVALID where n is even
    PatchJudgment.objects.filter(run=small.golden, patch__key__startswith="more-6-").update(
        verdict="INVALID"
    )
    keys = [f"more-6-{n}" for n in range(6)]
    sort_by_hand(small.golden, dict.fromkeys(keys, "other"))
    themes = present(agreement_report(small.dataset, runs=[small.golden]).rejection_themes)
    (only,) = themes.examples
    assert [example.patch_key for example in only[2]] == keys[:EXAMPLES]


def test_the_section_shows_the_table_and_links_examples(small: Small, lead_client: Client) -> None:
    rejecting(small)
    url = reverse("judging:report", args=[small.dataset.slug])
    page = whole_page(lead_client, f"{url}?run={small.golden.pk}&run={small.reference.pk}")
    assert 'id="rejection-themes-table"' in page
    assert (
        '<tr data-theme="root_cause"><th scope="row">Does not address the root cause</th>' in page
    )
    assert (
        '<td class="num" data-source="tool-b">1 <span class="muted small-text">100.0%</span>'
        in page
    )
    p2 = PatchJudgment.objects.get(run=small.golden, patch__key="P2")
    assert f'href="{p2.get_absolute_url()}">P2</a>' in page
    assert f'href="{small.patches["P2"].get_absolute_url()}">patch page</a>' in page
    assert "RATIONALE of P2" in page
    assert "1 failed (no theme is guessed)" in page


def test_before_any_sorting_the_section_says_so_and_links_the_run_page(
    small: Small, lead_client: Client
) -> None:
    url = reverse("judging:report", args=[small.dataset.slug])
    page = whole_page(lead_client, f"{url}?run={small.golden.pk}")
    assert "is sorted yet" in page
    assert f'href="{small.golden.get_absolute_url()}#run-rejections"' in page
    data = json.loads(lead_client.get(f"{url}?run={small.golden.pk}&format=json").content)
    assert data["rejection_themes"] is None
    page = whole_page(lead_client, f"{url}?runs=1")  # no run at all
    assert "There is no run in the report to read rejections from." in page


def test_the_json_and_csv_carry_the_table(small: Small, lead_client: Client) -> None:
    rejecting(small)
    url = reverse("judging:report", args=[small.dataset.slug]) + f"?run={small.golden.pk}"
    data = json.loads(lead_client.get(url + "&format=json").content)["rejection_themes"]
    assert data["run"] == small.golden.pk
    assert (data["rejected"], data["sorted"], data["failed"], data["pending"]) == (4, 3, 1, 0)
    assert data["prompt_version"] == PROMPT_VERSION
    themes = {row["theme"]: row for row in data["themes"]}
    assert list(themes) == THEMES
    expected = expected_counts(small.golden)
    for theme, row in themes.items():
        for source, cell in row["by_source"].items():
            assert cell["patches"] == expected[theme, source]
    assert themes["root_cause"]["share"] == 2 / 3
    assert data["examples"]["root_cause"][0]["patch"] == "P2"
    assert (data["offline"], data["offline_sorted"], data["note"]) == (False, 0, "")
    rows = list(csv.DictReader(io.StringIO(lead_client.get(url + "&format=csv").content.decode())))
    cells = {
        (row["figure"], row["column"]): row["value"]
        for row in rows
        if row["section"] == "rejection_themes"
    }
    assert cells[(f"run {small.golden.pk} root_cause", "All sources")] == "2"
    assert cells[(f"run {small.golden.pk} root_cause", "tool-b")] == "1"


def test_the_rejection_themes_cost_the_same_queries_at_any_size(small: Small) -> None:
    rejecting(small)
    with CaptureQueriesContext(connection) as few:
        agreement_report(small.dataset, runs=[small.golden], sections=[BREAKDOWN])
    add_patches(small, 40)
    more = PatchJudgment.objects.filter(run=small.golden, patch__key__startswith="more-")
    more.update(verdict="INVALID")
    sort_by_hand(
        small.golden,
        {key: THEMES[n % 5] for n, key in enumerate(more.values_list("patch__key", flat=True))},
    )
    with CaptureQueriesContext(connection) as many:
        report = agreement_report(small.dataset, runs=[small.golden], sections=[BREAKDOWN])
    assert present(report.rejection_themes).sorted == 43
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]
    themes = [q["sql"] for q in many.captured_queries if "judging_rejectiontheme" in q["sql"]]
    assert len(themes) == 2  # the rows, then the examples' texts
