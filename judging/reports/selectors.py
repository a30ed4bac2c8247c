"""Agreement reports (paper 004 Tables 5–6, paper 000 RQ2): what a lead reads about a
dataset's labels and its judging runs, for the report page, its exports and
``manage.py agreement_report``.

The report reads everything it needs in a fixed number of queries, whatever the number of
patches (the patches, the labels and adjudications, the runs' verdicts, and per run its
calibration); the records become arrays once (``scope``), every figure and its interval
comes from one bootstrap matrix over them (``resampling``), and the sections are computed
by ``humans`` and ``judges``. A page can ask for some sections only: each loads on its own.
"""

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.db.models import QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from judging.annotations.selectors import CampaignNotFound, campaign_get, campaign_patch_ids
from judging.calibration.selectors import runs_calibration_patch_ids
from judging.consensus.rules import ConsensusRule, consensus_rule_for, dataset_rows_parts
from judging.models import (
    Adjudication,
    Annotation,
    Calibration,
    Campaign,
    Context,
    JudgingRun,
    Label,
    PatchJudgment,
    RejectionTheme,
    StrategyResult,
)
from judging.reports import read_cache
from judging.reports.corrected_rate import CorrectedRate, corrected_valid_rate
from judging.reports.figures import Sampling
from judging.reports.humans import HumanSection, human_section
from judging.reports.judges import (
    BREAKDOWNS,
    Breakdown,
    HumanJudgeAgreement,
    JudgeColumn,
    RunMasks,
    RunVerdicts,
    breakdown,
    human_judge_agreement,
    judge_column,
)
from judging.reports.ordinal import DimensionAgreement, JudgeRatings, Ratings, dimensions_agreement
from judging.reports.rejections import (
    ROW_FIELDS,
    RejectionThemes,
    rejected_sources,
    rejection_themes,
    with_texts,
)
from judging.reports.resampling import Replicates
from judging.reports.routing_curve import RoutingCurve, routing_curve
from judging.reports.scope import CODES, INVALID, NO_CONSENSUS, VALID, Scope, consensus_columns
from judging.reports.valid_at_k import Candidate, ValidAtK, valid_at_k
from judging.runs.selectors import UNKNOWN_RUN
from judging.runs.uncertainty import margin_order
from rubrics.models import Dataset, Patch
from sejury_web.gc_pause import collector_paused
from sejury_web.ids import id_parse
from sejury_web.row_versions import count_of, newest, row_version_of, total

FOREIGN_RUN = "run {run} judged {other}, not {dataset}"
FOREIGN_CAMPAIGN = "campaign {campaign} labels {other}, not {dataset}"

HUMANS, JUDGES, HUMAN_JUDGE, BREAKDOWN = "humans", "judges", "human_judge", "breakdowns"
SECTIONS = (HUMANS, JUDGES, HUMAN_JUDGE, BREAKDOWN)


class ReportError(ValueError):
    """The report cannot be made as asked (an unknown or foreign run or campaign)."""


@dataclasses.dataclass(frozen=True)
class AgreementReport:
    dataset: Dataset
    campaign: Campaign | None  # the patches of one campaign only, or the whole dataset
    runs: list[RunVerdicts]  # none when only the human section was asked: it reads none
    runs_by_default: bool  # no run was asked for: the newest finished run per context
    annotators: dict[int, str]  # id → username, everyone with a label in scope
    patches_in_scope: int  # with or without labels
    rule: ConsensusRule  # how the consensus of the labels was reached
    sampling: Sampling
    # The sections asked for; the others are None (a page loads each on its own).
    humans: HumanSection | None
    judges: list[JudgeColumn] | None
    human_judge: list[HumanJudgeAgreement] | None
    breakdowns: list[Breakdown] | None
    routing: list[RoutingCurve] | None  # with the judges section
    # With the breakdowns: per patch source, validity from the consensus, else the first run.
    valid_at_k: list[ValidAtK] | None
    valid_at_k_run: RunVerdicts | None  # whose verdicts stand in where humans gave none
    # With the breakdowns: per patch source, the share of test-passing candidates that run
    # calls VALID, and that share corrected for its errors on the labelled patches.
    corrected_valid_rate: list[CorrectedRate] | None
    # With the breakdowns: why that run rejected test-passing patches, per source (None
    # without a run).
    rejection_themes: RejectionThemes | None = None
    # With the human–judge section: per dimension the annotators rated, their ordinal
    # agreement, and each written judge's against their median (``ordinal``).
    dimensions: list[DimensionAgreement] | None = None


def _ids(values: Iterable[int | str], what: str) -> list[int]:
    try:
        return list(dict.fromkeys(id_parse(value, what=what) for value in values))
    except ValueError as error:
        raise ReportError(str(error)) from None


def report_campaign(*, dataset: Dataset, campaign_id: int | str | None) -> Campaign | None:
    """The campaign asked for, checked to be on ``dataset``; None when none was asked."""
    if campaign_id in (None, ""):
        return None
    (pk,) = _ids([campaign_id], "a campaign")
    try:
        campaign = campaign_get(campaign_id=pk)
    except CampaignNotFound as error:
        raise ReportError(str(error)) from None
    if campaign.dataset_id != dataset.pk:
        raise ReportError(
            FOREIGN_CAMPAIGN.format(campaign=pk, other=campaign.dataset, dataset=dataset)
        )
    return campaign


def report_runs(*, dataset: Dataset, run_ids: Iterable[int | str]) -> list[JudgingRun]:
    """The runs asked for, in the order asked, each checked to be of ``dataset``."""
    ids = _ids(run_ids, "a run")
    found = JudgingRun.objects.select_related("dataset").in_bulk(ids)
    for pk in ids:
        if pk not in found:
            raise ReportError(UNKNOWN_RUN.format(run=pk))
        if found[pk].dataset_id != dataset.pk:
            raise ReportError(FOREIGN_RUN.format(run=pk, other=found[pk].dataset, dataset=dataset))
    return [found[pk] for pk in ids]


def default_runs(dataset: Dataset) -> list[JudgingRun]:
    """The newest finished run of each context, in the order of Table 6's columns."""
    newest: dict[str, JudgingRun] = {}
    finished = JudgingRun.objects.filter(
        dataset=dataset, kind=JudgingRun.Kind.RUN, status=JudgingRun.Status.FINISHED
    ).order_by("-created_at", "-id")
    for run in finished:
        newest.setdefault(run.context, run)
    return [newest[context] for context in Context.values if context in newest]


def run_choices(dataset: Dataset) -> list[JudgingRun]:
    """The runs a lead can put in the report: every judging run of the dataset."""
    return list(JudgingRun.objects.filter(dataset=dataset, kind=JudgingRun.Kind.RUN))


@dataclasses.dataclass(frozen=True)
class _Read:
    """What a report reads of its scope, once: its patches with labels or an adjudication as
    a ``Scope`` (without its replicates), every patch as a valid@k candidate, and every
    patch's key (the uncertainty ordering's last tie-break)."""

    columns: dict[str, Any]  # ``Scope.of_columns``'s arguments, but the replicates
    candidates: list[Candidate]
    keys: dict[int, str]
    ratings: list[Ratings] = dataclasses.field(default_factory=list)  # per rated dimension


def _positions(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``ids`` (ascending, unique), and which are there."""
    if not len(ids):
        return np.zeros(0, np.int64), np.zeros(len(values), bool)
    where = np.minimum(np.searchsorted(ids, values), len(ids) - 1)
    found = ids[where] == values
    return where[found], found


def _records(dataset: Dataset, patch_ids: set[int] | None, rule: ConsensusRule) -> _Read:
    """The scope's patches with labels or an adjudication, as columns in ascending patch id
    (as ``dataset_consensus`` orders them), with their consensus under ``rule``; and every
    patch of the scope as a valid@k candidate: four queries that sort nothing, and no object
    per patch or label."""
    patches = list(
        Patch.objects.filter(dataset=dataset)
        .order_by()
        .values_list("id", "bug_id", "bug__bug_type", "source", "tests_pass", "key")
    )
    facts = {row[0]: row for row in patches if patch_ids is None or row[0] in patch_ids}
    scales = _scales(dataset.pk)
    # With rated dimensions, each label's ratings come with it, as the JSON's text: one
    # ``json.loads`` of them all costs less than the database extracting each rating.
    labels = list(
        Annotation.objects.filter(patch__dataset=dataset)
        .order_by()
        .values_list(
            "patch_id", "annotator_id", "label", *([Cast("ratings", TextField())] if scales else [])
        )
    )
    decided = list(
        Adjudication.objects.filter(patch__dataset=dataset)
        .order_by()
        .values_list("patch_id", "label")
    )
    label_ids = np.array([row[0] for row in labels], np.int64)
    decided_ids = np.array([row[0] for row in decided], np.int64)
    ids = np.union1d(label_ids, decided_ids)  # ascending, once each
    ids = ids[np.isin(ids, np.fromiter(facts, np.int64, count=len(facts)))]
    # Each label's patch index, its annotator and code, sorted by patch then annotator.
    label_patch, found = _positions(ids, label_ids)
    label_annotator = np.array([row[1] for row in labels], np.int64)[found]
    label_code = np.array([CODES[row[2]] for row in labels], np.int64)[found]
    order = np.lexsort((label_annotator, label_patch))
    label_patch, label_annotator = label_patch[order], label_annotator[order]
    label_code = label_code[order]
    size = len(ids)
    adjudicated = np.full(size, NO_CONSENSUS, np.int8)
    decided_place, found = _positions(ids, decided_ids)
    adjudicated[decided_place] = np.array(
        [
            (VALID if label == Label.VALID else INVALID) if label else NO_CONSENSUS
            for _, label in decided
        ],
        np.int8,
    )[found]
    valid = np.bincount(label_patch[label_code == 0], minlength=size)
    invalid = np.bincount(label_patch[label_code == 1], minlength=size)
    consensus, unanimous = consensus_columns(valid, invalid, adjudicated, rule)
    rows = [facts[patch_id] for patch_id in ids.tolist()]
    columns = {
        "patch_ids": ids,
        "bug_ids": np.array([row[1] for row in rows], np.int64),
        "groups": {"bug_type": [row[2] for row in rows], "source": [row[3] for row in rows]},
        "consensus": consensus,
        "unanimous": unanimous,
        "label_patch": label_patch,
        "label_annotator": label_annotator,
        "label_code": label_code,
    }
    candidates = [
        Candidate(patch_id, bug_id, source, tests_pass)
        for patch_id, bug_id, _, source, tests_pass, _ in facts.values()
    ]
    ratings = _ratings(scales, ids, label_ids, labels)
    return _Read(columns, candidates, {row[0]: row[5] for row in patches}, ratings)


def _scales(dataset_id: int) -> dict[str, tuple[int, int]]:
    """The dimensions the dataset's campaigns rate, each on the scale spanning every
    campaign's (a name rated 1–5 in one and 0–3 in another: 0–5)."""
    scales: dict[str, tuple[int, int]] = {}
    for dimensions in (
        Campaign.objects.filter(dataset_id=dataset_id)
        .order_by("pk")
        .values_list("dimensions", flat=True)
    ):
        for d in dimensions or ():
            low, high = scales.get(d["name"], (d["low"], d["high"]))
            scales[d["name"]] = (min(low, d["low"]), max(high, d["high"]))
    return scales


def _ratings(
    scales: dict[str, tuple[int, int]],
    ids: np.ndarray,
    label_ids: np.ndarray,
    labels: list[tuple[Any, ...]],
) -> list[Ratings]:
    """Each dimension the dataset's campaigns rate (``scales``), with the ratings of the
    scope's patches (``ids``, ascending), sorted by patch then annotator: from the labels'
    rows (patch id, annotator, label, ratings as JSON text) and their patch ids.

    Labels rate with a few values on a few dimensions, so the same texts come back again
    and again: each distinct text is decoded and made numbers once (50,000 labels of the
    bench: about 40 texts), then every label takes its text's."""
    if not scales:
        return []
    distinct: dict[str | None, int] = {}
    text_of = np.fromiter(
        (distinct.setdefault(row[3], len(distinct)) for row in labels), np.int64, len(labels)
    )
    rated_by = _json_objects(list(distinct))
    annotators = np.array([row[1] for row in labels], np.int64)
    result = []
    for name, (low, high) in scales.items():
        values, whole = _wholes([ratings.get(name) for ratings in rated_by])
        values, whole = values[text_of], whole[text_of]
        rated = whole & (values >= 0) & (values >= low) & (values <= high)  # on the scale
        place, inside = _positions(ids, label_ids[rated])
        annotator, value = annotators[rated][inside], values[rated][inside]
        order = np.lexsort((annotator, place))
        result.append(Ratings(name, low, high, place[order], annotator[order], value[order]))
    return result


def _json_objects(texts: list[str | None]) -> list[dict[str, Any]]:
    """Each JSON text decoded, as an object ({} for anything else): one ``json.loads`` of
    them all, text by text only if that fails."""
    whole = texts if None not in texts else [text or "null" for text in texts]
    try:
        decoded = json.loads("[" + ",".join(whole) + "]")  # type: ignore[arg-type]
    except ValueError:
        decoded = []
    if len(decoded) != len(texts):
        decoded = [_json_or_none(text) for text in texts]
    if set(map(type, decoded)) <= {dict}:
        return decoded
    return [value if isinstance(value, dict) else {} for value in decoded]


def _json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _whole(value: Any) -> int | None:
    """A rating as the database's JSON extraction gives it (a number or its text)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def _wholes(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``_whole`` of each value: the numbers (0 where none) and where there is one (past 64
    bits, none). Whole numbers and nothing else (what ratings are: checked on write) in one
    numpy conversion; anything else value by value."""
    array = np.array(values, dtype=object)
    if set(map(type, values)) <= {int, type(None)}:
        present = array != None  # noqa: E711 - element by element
        numbers = np.zeros(len(values), np.int64)
        try:
            numbers[present] = array[present].astype(np.int64)
            return numbers, present
        except OverflowError:
            pass  # past 64 bits: as any other value
    wholes = [_whole(value) for value in values]
    present = np.array([whole is not None and -(2**63) <= whole < 2**63 for whole in wholes], bool)
    kept = [whole if keep else 0 for whole, keep in zip(wholes, present.tolist(), strict=True)]
    return np.array(kept, np.int64), present


def _judge_ratings(
    runs: Sequence[JudgingRun], names: Sequence[str]
) -> dict[int, dict[str, dict[str, dict[int, int]]]]:
    """Per run, its written judges' ratings of the dimensions ``names``: member → dimension
    → patch id → rating, from their results' answers (``judging.judges.answers``), each
    rating extracted by the database: one query."""
    result: dict[int, dict[str, dict[str, dict[int, int]]]] = {run.pk: {} for run in runs}
    if not runs or not names:
        return result
    ratings = [
        KeyTextTransform(
            "rating",
            KeyTransform(name, KeyTransform("dimensions", KeyTransform("judge", "answers"))),
        )
        for name in names
    ]
    rows = list(
        StrategyResult.objects.filter(
            judgment__run__in=runs, status="done", prompt_version__startswith="written:"
        )
        .order_by()
        .values_list("judgment__run_id", "judgment__patch_id", "strategy", *ratings)
    )
    if not rows:
        return result
    # Each (run, member) as a number, in the order of its rows.
    members: dict[tuple[int, str], int] = {}
    group = np.fromiter(
        (members.setdefault((row[0], row[2]), len(members)) for row in rows), np.int64, len(rows)
    )
    patch_ids = np.fromiter((row[1] for row in rows), np.int64, len(rows))
    columns = [_wholes([row[3 + index] for row in rows]) for index in range(len(names))]
    rated = np.logical_or.reduce([whole for _, whole in columns])
    # Members in the order of their first rating (as one pass over the rows would meet them).
    groups, first = np.unique(group[rated], return_index=True)
    keys = list(members)
    for number in groups[np.argsort(first)].tolist():
        run_id, member = keys[number]
        mine = group == number
        for name, (values, whole) in zip(names, columns, strict=True):
            chosen = mine & whole
            if chosen.any():
                by_patch = zip(patch_ids[chosen].tolist(), values[chosen].tolist(), strict=True)
                result[run_id].setdefault(member, {})[name] = dict(by_patch)
    return result


def uncertainty_ranks(
    run: RunVerdicts, spreads: dict[int, float | None], keys: dict[int, str]
) -> dict[int, int]:
    """Patch id → place in the run's uncertainty ordering (0: the least certain verdict),
    ``margin_ranking``'s, from what the report has read already: the run's scores (its
    finished verdicts with a score), their spreads and the patches' keys."""
    rows = (
        (patch_id, score, spreads.get(patch_id), keys.get(patch_id, ""))
        for patch_id, score in run.scores.items()
    )
    return {patch_id: rank for rank, patch_id in enumerate(margin_order(rows, run.run))}


def _run_verdicts(
    runs: Sequence[JudgingRun],
) -> tuple[list[RunVerdicts], dict[int, dict[int, float | None]]]:
    """Every run's verdicts and statuses in one query, and each run's calibration; and per
    run, the spread of each scored verdict (for the uncertainty ordering), and its written
    judges' dimension ratings (one query more)."""
    verdicts: dict[int, dict[int, str]] = {run.pk: {} for run in runs}
    statuses: dict[int, dict[int, str]] = {run.pk: {} for run in runs}
    scores: dict[int, dict[int, float]] = {run.pk: {} for run in runs}
    spreads: dict[int, dict[int, float | None]] = {run.pk: {} for run in runs}
    rows = (
        PatchJudgment.objects.filter(run__in=runs)
        .order_by()
        .values_list("run_id", "patch_id", "status", "verdict", "score", "spread")
    )
    done = PatchJudgment.Status.DONE
    for run_id, patch_id, status, verdict, score, spread in rows:
        statuses[run_id][patch_id] = status
        if status == done and verdict:
            verdicts[run_id][patch_id] = verdict
            if score is not None:
                scores[run_id][patch_id] = score
                spreads[run_id][patch_id] = spread
    result = []
    rated = _judge_ratings(runs, list(_scales(runs[0].dataset_id)) if runs else [])
    calibrated = runs_calibration_patch_ids(runs)
    for run, (calibration, excluded) in zip(runs, calibrated, strict=True):
        result.append(
            RunVerdicts(
                run=run,
                verdicts=verdicts[run.pk],
                statuses=statuses[run.pk],
                calibration=calibration,
                excluded=frozenset(excluded),
                scores=scores[run.pk],
                dimension_ratings=rated[run.pk],
            )
        )
    return result, spreads


def _rejection_themes(run: RunVerdicts, source_of: Mapping[int, str]) -> RejectionThemes:
    """Why ``run`` rejected its test-passing patches ``source_of`` (``rejected_sources``): one
    query for every row of the run (no text), and one for the texts of the few examples, if
    there are any."""
    rows = RejectionTheme.objects.filter(judgment__run=run.run).order_by().values_list(*ROW_FIELDS)
    themes = rejection_themes(run, source_of, rows)
    ids = themes.example_ids()
    if not ids:
        return themes
    texts = RejectionTheme.objects.filter(pk__in=ids).values_list(
        "pk", "rationale", "justification", "strategy"
    )
    return with_texts(themes, {pk: (rationale, text, who) for pk, rationale, text, who in texts})


def run_rejection_themes(run: JudgingRun) -> RejectionThemes:
    """Why ``run`` rejected its dataset's test-passing patches, per source: what the report
    shows of it, for the whole dataset, without the rest of the report."""
    candidates = [
        Candidate(*row)
        for row in Patch.objects.filter(dataset_id=run.dataset_id).values_list(
            "id", "bug_id", "source", "tests_pass"
        )
    ]
    (verdicts,), _ = _run_verdicts([run])
    return _rejection_themes(verdicts, rejected_sources(verdicts, candidates))


@dataclasses.dataclass(frozen=True)
class _Inputs:
    """What every section of a report is computed from, but the runs: its reads, and their
    arrays."""

    read: _Read
    annotators: set[int]  # everyone with a label in scope
    scope: Scope


def _inputs(
    dataset: Dataset, patch_ids: set[int] | None, rule: ConsensusRule, sampling: Sampling
) -> _Inputs:
    read = _records(dataset, patch_ids, rule)
    size = len(read.columns["patch_ids"])
    scope = Scope.of_columns(**read.columns, replicates=Replicates.draw(size, sampling))
    return _Inputs(read, set(scope.annotators.tolist()), scope)


def _verdicts_parts(dataset: Dataset, runs: Sequence[JudgingRun]) -> list[QuerySet]:
    """What changes whenever the runs' verdicts or calibrations would (verdicts have no
    change date: their finishing date, count by status and sum of scores)."""
    if not runs:
        return []
    verdicts = PatchJudgment.objects.filter(run__in=runs)
    calibrations = Calibration.objects.filter(campaign__dataset=dataset)
    return [
        count_of(verdicts),
        count_of(verdicts.filter(status=PatchJudgment.Status.DONE)),
        newest(verdicts, "finished_at"),
        total(verdicts, "score"),
        count_of(calibrations),
        newest(calibrations, "created_at"),
    ]


@dataclasses.dataclass(frozen=True)
class ReportShell:
    """What the report page shows before any figure: its scope, runs and consensus rule."""

    campaign: Campaign | None
    runs: list[JudgingRun]
    runs_by_default: bool
    patches_in_scope: int
    rule: ConsensusRule


def report_shell(
    dataset: Dataset, *, campaign: Campaign | None, runs: Sequence[JudgingRun] | None
) -> ReportShell:
    """The page's shell in a few queries: no label is read."""
    in_scope = (
        len(campaign_patch_ids(campaign))
        if campaign
        else Patch.objects.filter(dataset=dataset).count()
    )
    return ReportShell(
        campaign=campaign,
        runs=default_runs(dataset) if runs is None else list(runs),
        runs_by_default=runs is None,
        patches_in_scope=in_scope,
        rule=consensus_rule_for(dataset, campaign),
    )


def agreement_report(
    dataset: Dataset,
    *,
    campaign: Campaign | None = None,
    runs: Sequence[JudgingRun] | None = None,
    sampling: Sampling | None = None,
    sections: Iterable[str] = SECTIONS,
) -> AgreementReport:
    """The report of ``dataset`` (or of one campaign's patches) and of ``runs``; without
    runs, of the newest finished run of each context (pass ``[]`` for humans alone).

    The consensus follows the campaign's rule, or the dataset's without a campaign.
    ``sections`` limits the work to some of ``SECTIONS``; the others are None. Computed with
    the cyclic garbage collector off (``sejury_web.gc_pause``).
    """
    # While a report is computed the cyclic garbage collector is off (measured on the bench's
    # 10,000-patch report, issue 29, 2 cores, same figures to the bit). The reads make some
    # 100,000 row tuples, all kept until the arrays are built: the collector walked them again
    # and again (170 young collections, 16 middle ones, 20–25 ms) and in 3 computes out of 5 the
    # whole heap too (70–86 ms). Off, the compute took 60–120 ms less, wall and CPU, in 3
    # alternating turns of 10 at load 2.7, the one young collection when it is back on (2–4 ms)
    # included. Refcounting frees everything else.
    # BLAS keeps its threads: on one thread (threadpoolctl) the compute took 36–114 ms more wall
    # time on a quiet machine (3 alternating turns of 10, load 1), though 80–160 ms less CPU at
    # load 2.5, where a second thread's spinning is charged to the process.
    with collector_paused():
        return _agreement_report(dataset, campaign, runs, sampling, sections)


def _agreement_report(
    dataset: Dataset,
    campaign: Campaign | None,
    runs: Sequence[JudgingRun] | None,
    sampling: Sampling | None,
    sections: Iterable[str],
) -> AgreementReport:
    sampling = sampling or Sampling()
    wanted = set(sections)
    by_default = runs is None
    if wanted <= {HUMANS}:
        chosen: list[JudgingRun] = []  # the human section reads no verdict
    else:
        chosen = default_runs(dataset) if runs is None else list(runs)
    patch_ids = campaign_patch_ids(campaign) if campaign else None
    rule = consensus_rule_for(dataset, campaign)
    # Read once while the data is unchanged: the page's four sections, and every view of it.
    # Whether it changed is one query: the rows' versions, then the runs'.
    rows, verdicts_version = row_version_of(
        ("report", dataset.pk, tuple(run.pk for run in chosen)),
        lambda: [dataset_rows_parts(dataset), _verdicts_parts(dataset, chosen)],
    )
    campaign_version = None if patch_ids is None else hash(frozenset(patch_ids))
    version = (*rows, campaign_version)
    inputs = read_cache.remembered(
        ("records", dataset.pk, dataset.created_at, campaign and campaign.pk, rule, sampling),
        version,
        lambda: _inputs(dataset, patch_ids, rule, sampling),
    )
    read, scope = inputs.read, inputs.scope
    candidates = read.candidates
    # Asked each time (a few rows): a renamed annotator shows at once.
    names = dict(User.objects.filter(pk__in=inputs.annotators).values_list("pk", "username"))
    ordered = sorted(inputs.annotators, key=lambda pk: (names.get(pk, ""), pk))
    # The written judges' ratings are read for the dimensions the campaigns rate: a dimension
    # rated since (a new campaign's) is another read, though no verdict changed.
    kept_verdicts, spreads = read_cache.remembered(
        (
            "verdicts", dataset.pk, dataset.created_at, tuple(run.pk for run in chosen),
            tuple(ratings.name for ratings in read.ratings),
        ),
        verdicts_version,
        lambda: _run_verdicts(chosen),
    )  # fmt: skip
    # The runs as asked for now (their names, thresholds), with the verdicts read.
    run_verdicts = [
        dataclasses.replace(verdicts, run=run)
        for verdicts, run in zip(kept_verdicts, chosen, strict=True)
    ]
    first_run = run_verdicts[0] if run_verdicts else None
    # The figures too, while the reads and the runs (every field) are the same: a section
    # viewed again is drawn, not computed.
    figures = read_cache.remembered(
        (
            "figures", dataset.pk, dataset.created_at, campaign and campaign.pk, rule, sampling,
            tuple(_fields(run) for run in chosen), tuple(ordered), frozenset(wanted),
        ),
        (version, verdicts_version),
        lambda: _figures(scope, ordered, run_verdicts, spreads, read, wanted, sampling),
        kind="figures",
        size=4 * len(SECTIONS),
    )  # fmt: skip
    return AgreementReport(
        dataset=dataset,
        campaign=campaign,
        runs=run_verdicts,
        runs_by_default=by_default,
        annotators={pk: names.get(pk, f"user {pk}") for pk in ordered},
        patches_in_scope=len(candidates),
        rule=rule,
        sampling=sampling,
        humans=figures.humans,
        judges=figures.judges,
        routing=figures.routing,
        human_judge=figures.human_judge,
        breakdowns=figures.breakdowns,
        valid_at_k=figures.valid_at_k,
        valid_at_k_run=first_run,
        corrected_valid_rate=figures.corrected_valid_rate,
        rejection_themes=_rejection_themes(first_run, figures.rejected)
        if figures.rejected is not None and first_run is not None
        else None,
        dimensions=figures.dimensions,
    )


def _fields(run: JudgingRun) -> str:
    """Every stored field of ``run``, as text: a run changed in any way is another key."""
    return repr([getattr(run, field.attname) for field in run._meta.concrete_fields])


@dataclasses.dataclass(frozen=True)
class _Figures:
    humans: HumanSection | None
    judges: list[JudgeColumn] | None
    routing: list[RoutingCurve] | None
    human_judge: list[HumanJudgeAgreement] | None
    breakdowns: list[Breakdown] | None
    valid_at_k: list[ValidAtK] | None
    corrected_valid_rate: list[CorrectedRate] | None
    dimensions: list[DimensionAgreement] | None = None
    # The first run's rejected test-passing patches (patch id → source): the rejection
    # themes' rows are read each time (the sorting goes on with no verdict changed), these not.
    rejected: dict[int, str] | None = None


def _dimensions(
    scope: Scope, read: _Read, run_verdicts: list[RunVerdicts]
) -> list[DimensionAgreement]:
    """Each rated dimension's section: its ratings, and every run's written judges that rate
    a dimension of that name (their patches outside the scope, or a calibration's, left out)."""
    ids = scope.patch_ids
    judges: dict[str, list[JudgeRatings]] = {}
    for run in run_verdicts:
        label = f"Run {run.run.pk}" + (f" {run.run.name}" if run.run.name else "")
        for member, by_dimension in run.dimension_ratings.items():
            for name, by_patch in by_dimension.items():
                patch_ids = np.fromiter(by_patch, np.int64, count=len(by_patch))
                values = np.fromiter(by_patch.values(), np.int64, count=len(by_patch))
                kept = ~np.isin(patch_ids, np.fromiter(run.excluded, np.int64))
                place, inside = _positions(ids, patch_ids[kept])
                judges.setdefault(name, []).append(
                    JudgeRatings(
                        run.run.pk, label, member, place, values[kept][inside], run.offline
                    )
                )
    sources = scope.groups["source"]
    return dimensions_agreement(scope.replicates, read.ratings, judges, sources)


def _figures(
    scope: Scope,
    ordered: list[int],
    run_verdicts: list[RunVerdicts],
    spreads: dict[int, dict[int, float | None]],
    read: _Read,
    wanted: set[str],
    sampling: Sampling,
) -> _Figures:
    """The sections asked for (the others None), from the report's reads."""
    first_run = run_verdicts[0] if run_verdicts else None
    runs_in_scope = [(run, RunMasks.of(scope, run)) for run in run_verdicts]
    return _Figures(
        humans=human_section(scope, ordered) if HUMANS in wanted else None,
        judges=[judge_column(scope, *run) for run in runs_in_scope] if JUDGES in wanted else None,
        routing=[
            routing_curve(scope, run, masks, uncertainty_ranks(run, spreads[run.run.pk], read.keys))
            for run, masks in runs_in_scope
        ]
        if JUDGES in wanted
        else None,
        human_judge=[human_judge_agreement(scope, *run) for run in runs_in_scope]
        if HUMAN_JUDGE in wanted
        else None,
        breakdowns=[breakdown(scope, key, runs_in_scope) for key in BREAKDOWNS]
        if BREAKDOWN in wanted
        else None,
        valid_at_k=valid_at_k(scope, read.candidates, first_run, sampling=sampling)
        if BREAKDOWN in wanted
        else None,
        corrected_valid_rate=corrected_valid_rate(
            scope, read.candidates, first_run, sampling=sampling
        )
        if BREAKDOWN in wanted
        else None,
        dimensions=_dimensions(scope, read, run_verdicts) if HUMAN_JUDGE in wanted else None,
        rejected=rejected_sources(first_run, read.candidates)
        if BREAKDOWN in wanted and first_run is not None
        else None,
    )
