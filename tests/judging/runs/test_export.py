"""``export_verdicts`` and its records: values as stored, the offline label, bounded queries."""

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pytest_django.fixtures import Settings

from judging.models import Annotation, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.export import csv_columns, verdict_records
from judging.runs.selectors import UNKNOWN_RUN
from judging.runs.services import run_create
from rubrics.models import Dataset
from sejury_web.llm import OFFLINE_MARKER
from tests.judging.factories import UserFactory, make_golden, unchecked_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

OnCommit = Callable[..., Any]
TEAM = ["s1b", "rubric", "s3"]  # the rubric judge not first: columns follow the team


def dataset_of(bugs: int, patches: int) -> Dataset:
    dataset = DatasetFactory(name="Export Set")
    for b in range(bugs):
        bug = BugFactory(dataset=dataset, key=f"BUG-{b}")
        for p in range(patches):
            PatchFactory(bug=bug, key=f"BUG-{b}-{p}", diff=make_diff(new=f"x = {p}"))
    return dataset


@pytest.fixture
def judged(eager_tasks: None, django_capture_on_commit_callbacks: OnCommit) -> JudgingRun:
    """A finished offline run: BUG-0's three patches judged, BUG-1's failed (no golden rubric)."""
    dataset = dataset_of(bugs=2, patches=3)
    make_golden(dataset.bugs.get(key="BUG-0"))
    with django_capture_on_commit_callbacks(execute=True):  # BUG-1's lack: no door's run
        run = unchecked_run(
            dataset=dataset, strategies=TEAM, context="golden", scale_lo=1, scale_hi=5, threshold=3
        )
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED
    return run


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_verdicts", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def member_scores(judgment: PatchJudgment) -> dict[str, float | None]:
    return {r.strategy: r.score for r in judgment.results.all()}


def test_jsonl_records_carry_the_stored_values(judged: JudgingRun) -> None:
    lines = export("--run", str(judged.pk), "--format", "jsonl").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["patch"] for r in records] == [f"BUG-{b}-{p}" for b in (0, 1) for p in (0, 1, 2)]
    for record in records:
        judgment = judged.judgments.get(patch__key=record["patch"])
        rubric = judgment.results.get(strategy="rubric")
        assert record == {
            "run": judged.pk,
            "dataset": "Export Set",
            "patch": judgment.patch.key,
            "bug": judgment.patch.bug.key,
            "status": judgment.status,
            "score": judgment.score,
            "verdict": judgment.verdict or None,
            "spread": judgment.spread,
            "scores": member_scores(judgment),
            "rubric_verdict": rubric.verdict or None,
            "provider": "offline",
            "model": judged.model,
            "context": "golden",
            "threshold": 3,
            "scale_lo": 1,
            "scale_hi": 5,
            "reducer": "mean",
            "error": judgment.error,
            "offline": True,
            "note": OFFLINE_MARKER,
        }
        assert list(record["scores"]) == TEAM
    done = [r for r in records if r["bug"] == "BUG-0"]
    assert {r["status"] for r in done} == {"done"}
    assert all(1 <= r["score"] <= 5 and r["verdict"] in {"VALID", "INVALID"} for r in done)
    assert all(r["rubric_verdict"] in {"VALID", "INVALID"} for r in done)


def test_failed_patches_carry_their_error(judged: JudgingRun) -> None:
    records = [json.loads(line) for line in export("--run", str(judged.pk)).splitlines()]
    failed = [r for r in records if r["status"] == "failed"]
    assert [r["patch"] for r in failed] == ["BUG-1-0", "BUG-1-1", "BUG-1-2"]
    for record in failed:
        assert record["error"] == (
            "1 of 3 members failed: rubric: bug BUG-1 has no golden rubric yet"
        )
        assert (record["score"], record["verdict"], record["rubric_verdict"]) == (None, None, None)
        assert record["scores"]["rubric"] is None
        assert record["scores"]["s1b"] is not None  # the members that worked keep their score


def test_csv_has_a_column_per_member_in_team_order(judged: JudgingRun, tmp_path: Path) -> None:
    path = tmp_path / "verdicts.csv"
    export("--run", str(judged.pk), "--format", "csv", "--output", str(path))
    assert not (tmp_path / "verdicts.csv.partial").exists()
    with path.open(newline="", encoding="utf-8") as source:
        reader = csv.DictReader(source)
        assert reader.fieldnames == csv_columns(judged)
        rows = list(reader)
    assert reader.fieldnames[8:12] == ["score_s1b", "score_rubric", "score_s3", "rubric_verdict"]
    assert len(rows) == 6

    def cell(value: float | str | None) -> str:
        return "" if value is None else str(value)

    for row in rows:
        judgment = judged.judgments.get(patch__key=row["patch"])
        assert (row["run"], row["dataset"], row["bug"]) == (
            str(judged.pk),
            "Export Set",
            judgment.patch.bug.key,
        )
        assert (row["status"], row["score"], row["verdict"], row["spread"], row["error"]) == (
            judgment.status,
            cell(judgment.score),
            judgment.verdict,
            cell(judgment.spread),
            judgment.error,
        )
        for strategy, score in member_scores(judgment).items():
            assert row[f"score_{strategy}"] == cell(score)
        assert row["rubric_verdict"] == judgment.results.get(strategy="rubric").verdict
        assert (row["provider"], row["context"], row["threshold"]) == ("offline", "golden", "3.0")
        assert (row["scale_lo"], row["scale_hi"]) == ("1.0", "5.0")
        assert (row["offline"], row["note"]) == ("True", OFFLINE_MARKER)
    failed = [row for row in rows if row["status"] == "failed"]
    assert len(failed) == 3
    assert all("has no golden rubric yet" in row["error"] for row in failed)


def test_stdout_and_file_exports_are_the_same(judged: JudgingRun, tmp_path: Path) -> None:
    for fmt in ("jsonl", "csv"):
        path = tmp_path / f"out.{fmt}"
        export("--run", str(judged.pk), "--format", fmt, "--output", str(path))
        assert path.read_bytes().decode() == export("--run", str(judged.pk), "--format", fmt)


def test_a_pending_run_of_a_real_provider_has_no_offline_label(settings: Settings) -> None:
    settings.SEJURY_LLM = {**settings.SEJURY_LLM, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    dataset = dataset_of(bugs=1, patches=2)
    run = run_create(
        actor=None, dataset=dataset, strategies="s3,bleu", context="none", provider="openai"
    )
    records = [json.loads(line) for line in export("--run", str(run.pk)).splitlines()]
    assert [(r["status"], r["score"], r["verdict"], r["offline"], r["note"]) for r in records] == [
        ("pending", None, None, False, ""),
        ("pending", None, None, False, ""),
    ]
    assert records[0]["scores"] == {"s3": None, "bleu": None}
    assert "rubric_verdict" not in records[0]  # the rubric judge is not in the team
    assert records[0]["provider"] == "openai"
    header = export("--run", str(run.pk), "--format", "csv").splitlines()[0].split(",")
    assert "rubric_verdict" not in header
    assert header[8:10] == ["score_s3", "score_bleu"]


def test_the_query_count_does_not_grow_with_the_run() -> None:
    def queries(patches: int) -> int:
        run = run_create(
            actor=None, dataset=dataset_of(bugs=2, patches=patches), strategies=TEAM, context="none"
        )
        run = JudgingRun.objects.get(pk=run.pk)
        with CaptureQueriesContext(connection) as captured:
            records = list(verdict_records(run))
        assert len(records) == 2 * patches
        # The members' results are read by name: in no order, without the joins to the
        # run, patch and dataset that the model's default order would sort every chunk by.
        members = [q["sql"] for q in captured if 'FROM "judging_strategyresult"' in q["sql"]]
        assert members, [q["sql"][:80] for q in captured]
        for sql in members:
            assert "ORDER BY" not in sql, sql
            assert "judging_judgingrun" not in sql, sql
        return len(captured)

    small = queries(2)  # the judgments, and one chunk's member results
    Dataset.objects.all().delete()
    assert queries(600) == small + 2  # 1,200 judgments: three chunks of 500


def test_records_can_be_only_the_failed_ones(judged: JudgingRun) -> None:
    failed = list(verdict_records(judged, status=PatchJudgment.Status.FAILED))
    assert [r["patch"] for r in failed] == ["BUG-1-0", "BUG-1-1", "BUG-1-2"]
    assert StrategyResult.objects.filter(judgment__run=judged, status="failed").count() == 3


def test_an_unknown_run_is_an_error() -> None:
    with pytest.raises(CommandError) as excinfo:
        export("--run", "404")
    assert str(excinfo.value) == UNKNOWN_RUN.format(run=404)
    with pytest.raises(CommandError, match="invalid choice: 'xml'"):
        export("--run", "404", "--format", "xml")


def test_final_labels_take_the_consensus_where_there_is_one(judged: JudgingRun) -> None:
    people = [UserFactory(username=f"final-{n}") for n in range(2)]
    patch = judged.dataset.patches.get(key="BUG-0-0")
    verdict = judged.judgments.get(patch=patch).verdict
    humans = "INVALID" if verdict == "VALID" else "VALID"  # they disagree with the judge
    for person in people:
        Annotation.objects.create(patch=patch, annotator=person, label=humans)
    lines = export("--run", str(judged.pk), "--final-labels").splitlines()
    records = {r["patch"]: r for r in map(json.loads, lines)}
    assert (records["BUG-0-0"]["final_label"], records["BUG-0-0"]["final_from"]) == (
        humans, "consensus",
    )  # fmt: skip
    other = records["BUG-0-1"]
    assert (other["final_label"], other["final_from"]) == (other["verdict"], "judge")
    failed = records["BUG-1-0"]
    assert (failed["final_label"], failed["final_from"]) == (None, None)
    header, *rows = export(
        "--run", str(judged.pk), "--format", "csv", "--final-labels"
    ).splitlines()
    assert "rubric_verdict,final_label,final_from,provider" in header
    assert any(row.split(",")[0] == str(judged.pk) for row in rows)
    assert "final_label" not in export("--run", str(judged.pk))


def test_csv_cells_that_a_spreadsheet_would_run_are_written_as_text(
    judged: JudgingRun, tmp_path: Path
) -> None:
    """Issue 16 item 3: a key from an imported bundle such as ``=HYPERLINK(…)`` is written
    with a leading apostrophe (as the report's CSV already did, through the same helper)."""
    formula = '=HYPERLINK("http://example.com","x")'
    patch = judged.judgments.order_by("patch__key").first().patch  # type: ignore[union-attr]
    patch.key = formula
    patch.save()
    path = tmp_path / "verdicts.csv"
    export("--run", str(judged.pk), "--format", "csv", "--output", str(path))
    with path.open(newline="", encoding="utf-8") as source:
        patches = [row["patch"] for row in csv.DictReader(source)]
    assert f"'{formula}" in patches
    assert formula not in patches
    # Numbers stay numbers: a negative score would not be quoted.
    assert all(not cell.startswith("'") for cell in patches if cell != f"'{formula}")
