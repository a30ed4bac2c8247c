"""Verdict records: one per patch of a judging run, as JSON lines or CSV.

``export_verdicts`` writes them, and the run page's download will. A record holds the
team's verdict and every member's score. Records stream: one query (each member's score a
subquery on the unique (judgment, strategy) index) read in chunks, so a run of 10,000
patches is never in memory at once. Answers of the offline provider are labelled with
``OFFLINE_MARKER`` in every record: they are not an LLM's.
"""

import csv
import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import OuterRef, Subquery

from sejury_web.llm import OFFLINE_MARKER, Provider

from .models import JudgingRun, PatchJudgment, StrategyResult

CHUNK_SIZE = 500
RUBRIC_JUDGE = "rubric"  # the strategy whose own VALID/INVALID label a record carries

Record = dict[str, Any]


def _member(name: str, field: str) -> Subquery:
    return Subquery(
        StrategyResult.objects.filter(judgment=OuterRef("pk"), strategy=name).values(field)[:1]
    )


def verdict_records(run: JudgingRun, *, status: str = "") -> Iterator[Record]:
    """The run's records, by bug and patch key (only judgments with ``status``, if given).

    Missing numbers and verdicts (a pending or failed patch, a failed member) are ``None``;
    ``scores`` maps each member, in team order, to its 0–100 score; ``rubric_verdict`` is
    there only when the rubric judge is in the team.
    """
    team: list[str] = list(run.strategies)
    members = {f"member_{index}": _member(name, "score") for index, name in enumerate(team)}
    if RUBRIC_JUDGE in team:
        members["rubric_verdict"] = _member(RUBRIC_JUDGE, "verdict")
    rows = (
        PatchJudgment.objects.filter(run=run)
        .annotate(**members)
        .order_by("patch__bug__key", "patch__key")
        .values(
            "patch__key", "patch__bug__key", "status", "score", "verdict", "spread", "error",
            *members,
        )
    )  # fmt: skip
    if status:
        rows = rows.filter(status=status)
    dataset = run.dataset.name
    offline = OFFLINE_MARKER if run.provider == Provider.OFFLINE else ""
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        record: Record = {
            "run": run.pk,
            "dataset": dataset,
            "patch": row["patch__key"],
            "bug": row["patch__bug__key"],
            "status": row["status"],
            "score": row["score"],
            "verdict": row["verdict"] or None,
            "spread": row["spread"],
            "scores": {name: row[f"member_{index}"] for index, name in enumerate(team)},
        }
        if RUBRIC_JUDGE in team:
            record["rubric_verdict"] = row["rubric_verdict"] or None
        record.update(
            provider=run.provider,
            model=run.model,
            context=run.context,
            threshold=run.threshold,
            scale_lo=run.scale_lo,
            scale_hi=run.scale_hi,
            error=row["error"],
            offline=offline,
        )
        yield record


def verdict_jsonl(run: JudgingRun) -> Iterator[str]:
    """The records as JSON lines (with their newline)."""
    for record in verdict_records(run):
        yield json.dumps(record, ensure_ascii=False) + "\n"


def csv_columns(run: JudgingRun) -> list[str]:
    """The CSV header: a record's fields, with ``scores`` as one ``score_<member>`` per member."""
    columns = ["run", "dataset", "patch", "bug", "status", "score", "verdict", "spread"]
    columns += [f"score_{name}" for name in run.strategies]
    if RUBRIC_JUDGE in run.strategies:
        columns.append("rubric_verdict")
    return [
        *columns,
        *("provider", "model", "context", "threshold", "scale_lo", "scale_hi", "error", "offline"),
    ]


def verdict_csv(run: JudgingRun) -> Iterator[str]:
    """The records as CSV lines, after a header; missing values are empty cells."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: list[Any]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    columns = csv_columns(run)
    yield line(columns)
    for record in verdict_records(run):
        scores = record.pop("scores")
        record.update({f"score_{name}": score for name, score in scores.items()})
        yield line([record[column] for column in columns])


EXPORTERS: dict[str, Callable[[JudgingRun], Iterator[str]]] = {
    "jsonl": verdict_jsonl,
    "csv": verdict_csv,
}
