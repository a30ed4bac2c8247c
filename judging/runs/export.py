"""Verdict records: one per patch of a judging run, as JSON lines or CSV.

``export_verdicts`` writes them, and the API pages them (``verdict_page``). A record holds the
team's verdict and every member's score; with ``final``, also the patch's final label: the
human consensus where there is one (under the dataset's rule), otherwise the team's verdict,
and which of the two it is. Records stream: the judgments are read in chunks
of ``CHUNK_SIZE``, with one query for each chunk's member results, so a run of 10,000
patches is never in memory at once. A written judge of the ``dimensions`` kind adds each
dimension's rating and reason (``dimensions``; in the CSV a pair of columns per dimension).
Answers of the offline provider are marked in every
record (``offline``, true) and labelled with ``OFFLINE_MARKER`` (``note``): they are not an
LLM's.
"""

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import Q, QuerySet

from judging.consensus.rules import dataset_consensus
from judging.judges.selectors import members_dimensions
from judging.models import JudgingRun, PatchJudgment, StrategyResult
from sejury_web.csv_cells import csv_writer
from sejury_web.llm import OFFLINE_MARKER, Provider

CHUNK_SIZE = 500
RUBRIC_JUDGE = "rubric"  # the strategy whose own VALID/INVALID label a record carries
DIMENSION_FIELDS = ("rating", "reason")  # of each dimension a written member rates

Record = dict[str, Any]


def _members(judgment_ids: list[int], team: list[str]) -> dict[int, dict[str, dict[str, Any]]]:
    """Each judgment's member results (score and verdict) by strategy: one query, in no
    order (they are read by name; the model's default order joined the run, patch and
    dataset to sort them)."""
    members: dict[int, dict[str, dict[str, Any]]] = {pk: {} for pk in judgment_ids}
    results = StrategyResult.objects.filter(
        judgment_id__in=judgment_ids, strategy__in=team
    ).order_by()
    for row in results.values("judgment_id", "strategy", "score", "verdict"):
        members[row["judgment_id"]][row["strategy"]] = dict(row)
    return members


def _dimensions(judgment_ids: list[int], team: list[str]) -> dict[int, dict[str, Any]]:
    """Each judgment's written judges' dimension ratings and reasons, by member: one query,
    and none for a team without a written judge (``name@N``)."""
    written = [name for name in team if "@" in name]
    found: dict[int, dict[str, Any]] = {}
    if not written:
        return found
    # A judgment's members in the order they were written, as the default order has them,
    # without its joins.
    results = StrategyResult.objects.filter(
        judgment_id__in=judgment_ids, strategy__in=written
    ).order_by("id")
    for judgment_id, member, answers in results.values_list("judgment_id", "strategy", "answers"):
        dimensions = ((answers or {}).get("judge") or {}).get("dimensions")
        if isinstance(dimensions, dict):
            found.setdefault(judgment_id, {})[member] = {
                name: {"rating": value.get("rating"), "reason": value.get("reason", "")}
                for name, value in dimensions.items()
                if isinstance(value, dict)
            }
    return found


def _chunks(rows: Iterator[Any]) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK_SIZE:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


FROM_CONSENSUS, FROM_JUDGE = "consensus", "judge"


def _final(record: Record, consensus: str | None) -> None:
    if consensus:
        record.update(final_label=consensus, final_from=FROM_CONSENSUS)
    elif record["verdict"]:
        record.update(final_label=record["verdict"], final_from=FROM_JUDGE)
    else:
        record.update(final_label=None, final_from=None)


def _rows(run: JudgingRun, status: str = "") -> QuerySet[PatchJudgment, Any]:
    rows = (
        PatchJudgment.objects.filter(run=run)
        .order_by("patch__bug__sort_key", "patch__sort_key", "pk")
        .values(
            "pk",
            "patch_id",
            "patch__key",
            "patch__bug__key",
            "patch__bug__sort_key",
            "patch__sort_key",
            "status",
            "score",
            "verdict",
            "spread",
            "error",
        )
    )
    return rows.filter(status=status) if status else rows


def verdict_records(run: JudgingRun, *, status: str = "", final: bool = False) -> Iterator[Record]:
    """The run's records, by bug and patch key (only judgments with ``status``, if given).

    Missing numbers and verdicts (a pending or failed patch, a failed member) are ``None``;
    ``scores`` maps each member, in team order, to its 0–100 score; ``rubric_verdict`` is
    there only when the rubric judge is in the team.
    """
    rows = _rows(run, status).iterator(chunk_size=CHUNK_SIZE)
    for chunk in _chunks(rows):
        yield from _chunk_records(run, chunk, final=final)


def verdict_page(
    run: JudgingRun, *, after: int | None, limit: int, final: bool = False
) -> tuple[list[Record], int | None]:
    """Up to ``limit`` records, in ``verdict_records``' order, after the patch judgment
    ``after`` (from the start when None), and the judgment to continue after (None at the
    end). The position is a judgment's id, so a page costs the same anywhere in a run."""
    rows = _rows(run)
    if after is not None:
        mark = rows.filter(pk=after).first()
        if mark is None:
            raise PatchJudgment.DoesNotExist(f"run {run.pk} has no verdict {after}")
        bug, patch = mark["patch__bug__sort_key"], mark["patch__sort_key"]
        rows = rows.filter(
            Q(patch__bug__sort_key__gt=bug)
            | Q(patch__bug__sort_key=bug, patch__sort_key__gt=patch)
            | Q(patch__bug__sort_key=bug, patch__sort_key=patch, pk__gt=after)
        )
    chunk = list(rows[: limit + 1])
    more = len(chunk) > limit
    chunk = chunk[:limit]
    records = list(_chunk_records(run, chunk, final=final))
    return records, (chunk[-1]["pk"] if more else None)


def _chunk_records(
    run: JudgingRun, chunk: list[dict[str, Any]], *, final: bool
) -> Iterator[Record]:
    team: list[str] = list(run.strategies)
    dataset = run.dataset.name
    offline = run.provider == Provider.OFFLINE
    note = OFFLINE_MARKER if offline else ""
    members = _members([row["pk"] for row in chunk], team)
    dimensions = _dimensions([row["pk"] for row in chunk], team)
    settled = (
        dataset_consensus(run.dataset, patch_ids=[row["patch_id"] for row in chunk])
        if final
        else {}
    )
    for row in chunk:
        results = members[row["pk"]]
        record: Record = {
            "run": run.pk,
            "dataset": dataset,
            "patch": row["patch__key"],
            "bug": row["patch__bug__key"],
            "status": row["status"],
            "score": row["score"],
            "verdict": row["verdict"] or None,
            "spread": row["spread"],
            "scores": {name: results.get(name, {}).get("score") for name in team},
        }
        if RUBRIC_JUDGE in team:
            record["rubric_verdict"] = results.get(RUBRIC_JUDGE, {}).get("verdict") or None
        if row["pk"] in dimensions:  # a written judge's ratings and reasons, by member
            record["dimensions"] = dimensions[row["pk"]]
        if final:
            state = settled.get(row["patch_id"])
            _final(record, state.consensus if state else None)
        record.update(
            provider=run.provider,
            model=run.model,
            context=run.context,
            threshold=run.threshold,
            scale_lo=run.scale_lo,
            scale_hi=run.scale_hi,
            reducer=run.reducer,
            error=row["error"],
            offline=offline,
            note=note,
        )
        yield record


def verdict_jsonl(run: JudgingRun, *, final: bool = False) -> Iterator[str]:
    """The records as JSON lines (with their newline)."""
    for record in verdict_records(run, final=final):
        yield json.dumps(record, ensure_ascii=False) + "\n"


def _dimension_columns(run: JudgingRun) -> list[tuple[str, str, str]]:
    """(member, dimension, field) of each rating and reason column: every dimension the
    run's written members rate, in team order."""
    return [
        (member, dimension.name, field)
        for member, dimensions in members_dimensions(list(run.strategies)).items()
        for dimension in dimensions
        for field in DIMENSION_FIELDS
    ]


def csv_columns(
    run: JudgingRun,
    *,
    final: bool = False,
    rated: list[tuple[str, str, str]] | None = None,
) -> list[str]:
    """The CSV header: a record's fields, with ``scores`` as one ``score_<member>`` per member
    and ``dimensions`` as ``<member>.<dimension>.rating`` and ``….reason`` for each dimension
    a written member rates."""
    columns = ["run", "dataset", "patch", "bug", "status", "score", "verdict", "spread"]
    columns += [f"score_{name}" for name in run.strategies]
    if RUBRIC_JUDGE in run.strategies:
        columns.append("rubric_verdict")
    if rated is None:
        rated = _dimension_columns(run)
    columns += [".".join(column) for column in rated]
    if final:
        columns += ["final_label", "final_from"]
    return [
        *columns,
        *("provider", "model", "context", "threshold", "scale_lo", "scale_hi", "reducer"),
        *("error", "offline", "note"),
    ]


def verdict_csv(run: JudgingRun, *, final: bool = False) -> Iterator[str]:
    """The records as CSV lines, after a header; missing values are empty cells."""
    buffer = io.StringIO()
    writer = csv_writer(buffer)  # patch and bug keys come from imported bundles

    def line(values: list[Any]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    rated = _dimension_columns(run)  # read once, for the header and every row
    columns = csv_columns(run, final=final, rated=rated)
    yield line(columns)
    for record in verdict_records(run, final=final):
        scores = record.pop("scores")
        record.update({f"score_{name}": score for name, score in scores.items()})
        dimensions = record.pop("dimensions", {})
        record.update(
            {
                f"{member}.{name}.{field}": dimensions.get(member, {}).get(name, {}).get(field)
                for member, name, field in rated
            }
        )
        yield line([record[column] for column in columns])


EXPORTERS: dict[str, Callable[..., Iterator[str]]] = {
    "jsonl": verdict_jsonl,
    "csv": verdict_csv,
}
