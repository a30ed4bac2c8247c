"""Reads of judging runs for their pages: a run's verdict table, one verdict with every
prompt and answer behind it, and two runs compared patch by patch (the run list is
``judging.runs.selectors.runs_page``).

A page of the verdict table costs the same at 10,000 patches as at 10: a count, one query
for the page of judgments, one for their members' results (with the rubric revisions they
were judged with, and their rubrics' golden ones: a stale verdict is marked), and two for the
human consensus of the page's patches (their labels and adjudications: never the run's
other patches'). The filter "the judge disagrees with humans" computes the consensus in SQL
(``with_consensus``), so that the count and the page need no patch's labels in Python. While
a run runs, its page asks for the rows it shows that have changed since
(``verdict_rows_changed``): four queries, however many rows.
"""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)

from judging.consensus.rules import ConsensusRule, State, dataset_consensus, with_consensus
from judging.models import (
    BugStep,
    JudgingRun,
    Label,
    PatchJudgment,
    ReplacedResult,
    StrategyResult,
)
from judging.runs.selectors import RunNotFound, run_get
from judging.runs.stale import can_go_stale, has_stale_result
from judging.runs.uncertainty import margin, margin_expression
from judging.strategies import Strategy, get_strategy
from rubrics.models import Dataset
from sejury_web.llm.models import LLMCall

VERDICTS_PER_PAGE = 50
VERDICTS = (Label.VALID, Label.INVALID)
WAITING = "waiting"  # the Humans column of a patch labelled whose consensus is not settled
# Sort keys of the verdict table besides the members' names, and the field each orders by.
SORT_FIELDS = {
    "patch": "patch__sort_key",
    "bug": "patch__bug__sort_key",
    "score": "score",
    "spread": "spread",
    "margin": "margin",  # annotated: the score's distance from the threshold (uncertainty)
}
DEFAULT_SORT = "patch"
TRUE = {"1", "true", "on"}
STALE_NOTE = "judged with rubric revision {old}; revision {new} is golden now"
MEMBER_SCORE = "member_score"
# What a row of the verdict table reads: never a diff.
TABLE_FIELDS = ("id", "run_id", "status", "score", "verdict", "spread", "error")
TABLE_PATCH_FIELDS = ("patch__id", "patch__key", "patch__bug__id", "patch__bug__key")

SAME_RUN = "pick two different runs: both sides are run {run}"
OTHER_DATASETS = (
    "run {a} judged {dataset_a} and run {b} judged {dataset_b}: only runs of one dataset compare"
)


class CompareError(ValueError):
    """Two runs cannot be compared; the message says why."""


def run_team(run: JudgingRun) -> list[Strategy]:
    """The run's members, in team order."""
    return [get_strategy(name) for name in run.strategies]


@dataclass(frozen=True)
class TableQuery:
    """What the verdict table shows: filters, sort (``-`` first for descending) and page."""

    verdict: str = ""
    status: str = ""
    q: str = ""
    stale: bool = False  # only the patches whose rubric verdict is stale
    disagrees: bool = False  # only the verdicts the human consensus contradicts
    sort: str = DEFAULT_SORT
    page: int | str = 1

    @classmethod
    def from_params(cls, params: Mapping[str, Any], team: Iterable[str]) -> "TableQuery":
        """The query the request's parameters ask for; anything unknown falls back to none."""
        verdict = str(params.get("verdict", ""))
        status = str(params.get("status", ""))
        sort = str(params.get("sort", DEFAULT_SORT))
        if sort.removeprefix("-") not in {*SORT_FIELDS, *team}:
            sort = DEFAULT_SORT
        return cls(
            verdict=verdict if verdict in VERDICTS else "",
            status=status if status in PatchJudgment.Status.values else "",
            q=str(params.get("q", "")).strip(),
            stale=str(params.get("stale", "")) in TRUE,
            disagrees=str(params.get("disagrees", "")) in TRUE,
            sort=sort,
            page=params.get("page", 1),
        )

    @property
    def sort_key(self) -> str:
        return self.sort.removeprefix("-")

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")

    def params(self, **changes: Any) -> str:
        """This query as URL parameters, with ``changes``; defaults are left out."""
        query = replace(self, **changes)
        pairs = {
            "verdict": query.verdict,
            "status": query.status,
            "q": query.q,
            "stale": "1" if query.stale else "",
            "disagrees": "1" if query.disagrees else "",
            "sort": "" if query.sort == DEFAULT_SORT else query.sort,
            "page": "" if str(query.page) == "1" else query.page,
        }
        return urlencode({key: value for key, value in pairs.items() if value})

    def sorted_by(self, key: str) -> str:
        """The parameters of a click on column ``key``: ascending first, then reversed."""
        sort = f"-{key}" if self.sort == key else key
        return self.params(sort=sort, page=1)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    params: str  # what a click on the heading asks for
    arrow: str  # "▲"/"▼" on the column the table is sorted by


@dataclass(frozen=True)
class VerdictRow:
    judgment: PatchJudgment
    members: list[StrategyResult | None]  # in team order; None before a member ends
    margin: float | None  # the score's distance from the threshold, a share of the scale
    stale: str = ""  # why the rubric verdict is stale ("" when it is not)
    # The human consensus: VALID, INVALID, WAITING (labelled, not settled) or "" (no label).
    humans: str = ""

    @property
    def disagrees(self) -> bool:
        """The verdict is done and the consensus says the other label."""
        verdict = self.judgment.verdict
        return self.humans in VERDICTS and verdict in VERDICTS and verdict != self.humans

    @property
    def members_ended(self) -> int:
        """How many members have a result (done or failed): a running row's progress."""
        return sum(result is not None for result in self.members)


@dataclass(frozen=True)
class VerdictTable:
    query: TableQuery
    page: Page
    rows: list[VerdictRow]
    team: list[Strategy]
    columns: dict[str, Column]  # patch, bug, score, spread
    member_columns: list[Column]

    @property
    def previous_params(self) -> str:
        return self.query.params(page=self.page.number - 1)

    @property
    def next_params(self) -> str:
        return self.query.params(page=self.page.number + 1)


def _column(query: TableQuery, key: str, label: str) -> Column:
    arrow = ("▼" if query.descending else "▲") if query.sort_key == key else ""
    return Column(key=key, label=label, params=query.sorted_by(key), arrow=arrow)


def _stale_note(members: list[StrategyResult | None]) -> str:
    """Why a row's rubric verdict is stale, from its results' annotations ("" if it is not)."""
    for result in members:
        judged_with = getattr(result, "revision_number", None)
        golden = getattr(result, "golden_number", None)
        done = result is not None and result.status == StrategyResult.Status.DONE
        if done and judged_with is not None and golden is not None and golden > judged_with:
            return STALE_NOTE.format(old=judged_with, new=golden)
    return ""


def _verdict_rows(
    run: JudgingRun, team: list[Strategy], judgments: list[PatchJudgment]
) -> list[VerdictRow]:
    """The table's rows of ``judgments``, with each member's result: one query, in no order
    (the model's default order joins the run, patch and dataset to sort by them: two thirds
    of a run page's time at 10,000 patches)."""
    results = (
        StrategyResult.objects.filter(judgment__in=[judgment.pk for judgment in judgments])
        .order_by()
        .only("id", "judgment_id", "strategy", "status", "score", "verdict", "error")
    )
    if can_go_stale(run):
        results = results.annotate(
            revision_number=F("rubric_revision__number"),
            golden_number=F("rubric_revision__rubric__golden_revision__number"),
        )
    by_member = {(result.judgment_id, result.strategy): result for result in results}
    humans = _humans(run, judgments)
    rows: list[VerdictRow] = []
    for judgment in judgments:
        members = [by_member.get((judgment.pk, member.name)) for member in team]
        certainty = None if judgment.score is None else margin(judgment.score, run)
        rows.append(
            VerdictRow(
                judgment,
                members,
                certainty,
                _stale_note(members),
                humans.get(judgment.patch_id, ""),
            )
        )
    return rows


def _humans(run: JudgingRun, judgments: list[PatchJudgment]) -> dict[int, str]:
    """The human consensus of ``judgments``' patches only, under the dataset's rule (as the
    agreement report without a campaign): VALID, INVALID, or WAITING while labelled but not
    settled. Two queries (their labels, their adjudications); none without judgments."""
    if not judgments:
        return {}
    consensus = dataset_consensus(
        run.dataset, patch_ids=sorted({judgment.patch_id for judgment in judgments})
    )
    return {
        patch_id: state.consensus or WAITING
        for patch_id, state in consensus.items()
        if state.consensus or state.state in (State.DISPUTED, State.TOO_FEW)
    }


def run_verdicts(*, run: JudgingRun, query: TableQuery) -> VerdictTable:
    """One page of the run's verdicts as ``query`` filters and sorts them, with each member's
    result. Unfinished scores sort last in either direction."""
    judgments = PatchJudgment.objects.filter(run=run)
    if query.verdict:
        judgments = judgments.filter(verdict=query.verdict)
    if query.status:
        judgments = judgments.filter(status=query.status)
    if query.q:
        judgments = judgments.filter(
            Q(patch__key__icontains=query.q) | Q(patch__bug__key__icontains=query.q)
        )
    if query.stale:
        judgments = judgments.filter(has_stale_result()) if can_go_stale(run) else judgments.none()
    if query.disagrees:
        # The consensus is the other label (one reference: SQL repeats its subqueries for each).
        other = Case(
            When(verdict=Label.VALID, then=Value(Label.INVALID)),
            default=Value(Label.VALID),
            output_field=CharField(),
        )
        judgments = with_consensus(
            judgments.filter(status=PatchJudgment.Status.DONE, verdict__in=VERDICTS),
            ConsensusRule(run.dataset.consensus_rule),
        ).filter(consensus=other)
    field = SORT_FIELDS.get(query.sort_key)
    if field == "margin":
        judgments = judgments.annotate(margin=margin_expression(run))
    if field is None:
        field = MEMBER_SCORE
        scores = StrategyResult.objects.filter(judgment=OuterRef("pk"), strategy=query.sort_key)
        judgments = judgments.annotate(**{MEMBER_SCORE: Subquery(scores.values("score")[:1])})
    order = F(field).desc(nulls_last=True) if query.descending else F(field).asc(nulls_last=True)
    judgments = (
        judgments.select_related("patch__bug")
        .only(*TABLE_FIELDS, *TABLE_PATCH_FIELDS)
        .order_by(order, "patch__sort_key", "pk")
    )
    page = Paginator(judgments, VERDICTS_PER_PAGE).get_page(query.page)
    page.object_list = list(page.object_list)
    team = run_team(run)
    rows = _verdict_rows(run, team, page.object_list)
    headings = {
        "patch": "Patch",
        "bug": "Bug",
        "score": "Score",
        "spread": "Spread",
        "margin": "Margin",
    }
    return VerdictTable(
        query=replace(query, page=page.number),
        page=page,
        rows=rows,
        team=team,
        columns={key: _column(query, key, label) for key, label in headings.items()},
        member_columns=[_column(query, member.name, member.label) for member in team],
    )


def verdict_rows_changed(*, run: JudgingRun, seen: Mapping[int, int]) -> list[VerdictRow]:
    """The rows of a running run's table that changed since the page last showed them.

    ``seen`` maps the unfinished rows a page shows (judgment id) to how many members had
    ended then; a row comes back once its patch is judged (or failed) or another member
    has ended. At most a page's worth of ids is read: two queries, whatever the run's size.
    """
    ids = list(seen)[:VERDICTS_PER_PAGE]
    if not ids:
        return []
    judgments = list(
        PatchJudgment.objects.filter(run=run, pk__in=ids)
        .select_related("patch__bug")
        .only(*TABLE_FIELDS, *TABLE_PATCH_FIELDS)
        .order_by("pk")
    )
    rows = _verdict_rows(run, run_team(run), judgments)
    pending = PatchJudgment.Status.PENDING
    return [
        row
        for row in rows
        if row.judgment.status != pending or row.members_ended != seen[row.judgment.pk]
    ]


@dataclass(frozen=True)
class Call:
    """One model call of a member, as the verdict page shows it."""

    call_id: int
    step: str  # the strategy's name for the step ("assess", "rethink", ...), if known
    call: LLMCall | None  # None if the log row is gone
    messages: list[tuple[str, str]]  # (role, content)
    from_cache: bool

    @property
    def parsed(self) -> str:
        """The parsed answer as indented JSON ("" when the call produced none)."""
        return _json(self.call.answer) if self.call else ""


@dataclass(frozen=True)
class PersonaScore:
    """One persona of a role-player strategy (``roles``): its own score and reasoning."""

    label: str
    score: float | None  # as the persona answered it
    reasoning: str


@dataclass(frozen=True)
class DimensionScore:
    """One dimension a written judge rated (``judging.judges.answers``): rating and reason."""

    name: str
    rating: int | None
    reason: str
    scale: str = ""  # "1–5": the dimension's scale, as the judge's version defines it


@dataclass(frozen=True)
class Member:
    strategy: Strategy
    result: StrategyResult | None
    calls: list[Call]
    bug_step: BugStep | None  # s4/s5's first step for the patch's bug
    bug_step_call: Call | None

    @property
    def extra(self) -> str:
        """What a strategy without a model computed (baselines), as indented JSON."""
        extra = self.result.answers.get("extra") if self.result else None
        return _json(extra)

    @property
    def persona_scores(self) -> list[PersonaScore]:
        """Each persona's score and reasoning, in the strategy's order, for a strategy whose
        steps are personas (``roles``); [] for the others and for a result without answers
        (failed)."""
        answers = self.result.answers if self.result else {}
        rows = []
        for name, label in self.strategy.personas:
            answer = answers.get(name)
            if not isinstance(answer, dict):
                continue
            score = answer.get("score")
            rows.append(
                PersonaScore(
                    label,
                    float(score) if isinstance(score, int | float) else None,
                    str(answer.get("reasoning", "")),
                )
            )
        return rows

    @property
    def dimension_scores(self) -> list[DimensionScore]:
        """Each dimension a written judge of the ``dimensions`` kind rated, in its answer's
        order, with its reason; [] for every other member."""
        answer = (self.result.answers if self.result else {}).get("judge")
        dimensions = answer.get("dimensions") if isinstance(answer, dict) else None
        if not isinstance(dimensions, dict):
            return []
        scales = {d.name: f"{d.low}–{d.high}" for d in self.strategy.dimensions}
        rows = []
        for name, value in dimensions.items():
            value = value if isinstance(value, dict) else {}
            rating = value.get("rating")
            rows.append(
                DimensionScore(
                    str(name),
                    rating if isinstance(rating, int) and not isinstance(rating, bool) else None,
                    str(value.get("reason", "")),
                    scales.get(str(name), ""),
                )
            )
        return rows


@dataclass(frozen=True)
class Verdict:
    run: JudgingRun
    judgment: PatchJudgment
    members: list[Member]
    previous_id: int | None  # the neighbours in the table's default order (patch key)
    next_id: int | None
    replaced: list[ReplacedResult]  # earlier results that re-judging replaced, oldest first


def _json(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _messages(call: LLMCall | None) -> list[tuple[str, str]]:
    """The prompt as (role, content) pairs (``LLMCall.messages`` holds {role, content})."""
    if call is None:
        return []
    return [(str(m["role"]), str(m["content"])) for m in call.messages or []]


def verdict_get(*, run: JudgingRun, judgment_id: int) -> Verdict:
    """One patch's verdict with everything behind it: each member's calls (prompts, raw and
    parsed answers), s4/s5's bug-level step, the rubric revision the rubric judge read, and
    the earlier results that re-judging replaced. Raises ``PatchJudgment.DoesNotExist``."""
    judgment = PatchJudgment.objects.select_related("patch__bug__dataset", "patch__dataset").get(
        run=run, pk=judgment_id
    )
    results = {
        result.strategy: result
        for result in judgment.results.select_related("rubric_revision").defer(
            "rubric_revision__structure", "rubric_revision__text"
        )
    }
    steps = {
        step.strategy: step
        for step in BugStep.objects.filter(run=run, bug_id=judgment.patch.bug_id)
    }
    call_ids = [call_id for result in results.values() for call_id in result.call_ids]
    call_ids += [step.call_id for step in steps.values() if step.call_id]
    calls = LLMCall.objects.in_bulk(call_ids)
    members = []
    for strategy in run_team(run):
        result = results.get(strategy.name)
        member_calls: list[Call] = []
        if result is not None:
            # The steps in call order: a role player's personas (known even when a persona's
            # call failed and no answer was kept), else the answers' names as they were written.
            names = [name for name, _ in strategy.personas] or [
                name for name in result.answers if name != "extra"
            ]
            cached = set(result.cached_call_ids)
            for index, call_id in enumerate(result.call_ids):
                call = calls.get(call_id)
                step = names[index] if index < len(names) else ""
                member_calls.append(Call(call_id, step, call, _messages(call), call_id in cached))
        bug_step = steps.get(strategy.name) if strategy.bug_step else None
        bug_call = None
        if bug_step is not None and bug_step.call_id:
            call = calls.get(bug_step.call_id)
            bug_call = Call(bug_step.call_id, "", call, _messages(call), bug_step.from_cache)
        members.append(Member(strategy, result, member_calls, bug_step, bug_call))
    neighbours = PatchJudgment.objects.filter(run=run).values_list("pk", flat=True)
    # In the table's default order: patch keys, numbers as numbers, then the judgment (two
    # keys can share a sort key: "P-1" and "P-01").
    key, pk = judgment.patch.sort_key, judgment.pk
    before = Q(patch__sort_key__lt=key) | Q(patch__sort_key=key, pk__lt=pk)
    after = Q(patch__sort_key__gt=key) | Q(patch__sort_key=key, pk__gt=pk)
    previous_id = neighbours.filter(before).order_by("-patch__sort_key", "-pk").first()
    next_id = neighbours.filter(after).order_by("patch__sort_key", "pk").first()
    replaced = list(
        judgment.replaced_results.select_related("rubric_revision")
        .defer("rubric_revision__structure", "rubric_revision__text")
        .order_by("pk")
    )
    return Verdict(run, judgment, members, previous_id, next_id, replaced)


@dataclass(frozen=True)
class Comparison:
    """Two runs' verdicts on the patches both judged."""

    a: JudgingRun
    b: JudgingRun
    both_valid: int
    both_invalid: int
    a_valid_b_invalid: int
    a_invalid_b_valid: int
    unfinished: int  # judged by both, but failed or pending in at least one
    only_a: int
    only_b: int
    differing: Page  # A's judgments annotated with B's: b_id, b_score, b_verdict

    @property
    def agreeing(self) -> int:
        return self.both_valid + self.both_invalid

    @property
    def compared(self) -> int:
        return self.agreeing + self.a_valid_b_invalid + self.a_invalid_b_valid


def _run(run_id: int) -> JudgingRun:
    try:
        return run_get(run_id=run_id)
    except RunNotFound as error:
        raise CompareError(str(error)) from None


def _paired(a: JudgingRun, b: JudgingRun) -> QuerySet[PatchJudgment]:
    """A's judgments of the patches B judged too, each with B's judgment alongside. B has
    one judgment a patch: its subqueries are read in no order (the model's default order
    joined B's run, patch and dataset in each of them, for every row: half the comparison's
    time at 10,000 patches)."""
    other = PatchJudgment.objects.filter(run=b, patch=OuterRef("patch")).order_by()
    return (
        PatchJudgment.objects.filter(run=a)
        .filter(Exists(other))
        .annotate(
            b_id=Subquery(other.values("pk")[:1]),
            b_status=Subquery(other.values("status")[:1]),
            b_verdict=Subquery(other.values("verdict")[:1]),
            b_score=Subquery(other.values("score")[:1]),
        )
    )


def runs_compare(*, a_id: int, b_id: int, page: int | str = 1) -> Comparison:
    """Compare run ``a_id`` with run ``b_id``; raises ``CompareError`` when they cannot be."""
    if a_id == b_id:
        raise CompareError(SAME_RUN.format(run=a_id))
    a, b = _run(a_id), _run(b_id)
    if a.dataset_id != b.dataset_id:
        names = {"dataset_a": a.dataset.name, "dataset_b": b.dataset.name}
        raise CompareError(OTHER_DATASETS.format(a=a.pk, b=b.pk, **names))
    done = PatchJudgment.Status.DONE
    paired = _paired(a, b)
    both_done = Q(status=done, b_status=done)
    valid, invalid = Label.VALID, Label.INVALID
    counts = paired.aggregate(
        total=Count("pk"),
        both_valid=Count("pk", filter=both_done & Q(verdict=valid, b_verdict=valid)),
        both_invalid=Count("pk", filter=both_done & Q(verdict=invalid, b_verdict=invalid)),
        a_valid_b_invalid=Count("pk", filter=both_done & Q(verdict=valid, b_verdict=invalid)),
        a_invalid_b_valid=Count("pk", filter=both_done & Q(verdict=invalid, b_verdict=valid)),
    )
    in_a = PatchJudgment.objects.filter(run=a, patch=OuterRef("patch"))
    in_b = PatchJudgment.objects.filter(run=b, patch=OuterRef("patch"))
    differing = (
        paired.filter(both_done)
        .exclude(verdict=F("b_verdict"))
        .select_related("patch__bug", "patch__dataset")
        .defer("patch__diff", "patch__metadata")
        .order_by("patch__sort_key")
    )
    compared = sum(counts[key] for key in counts if key != "total")
    return Comparison(
        a=a,
        b=b,
        both_valid=counts["both_valid"],
        both_invalid=counts["both_invalid"],
        a_valid_b_invalid=counts["a_valid_b_invalid"],
        a_invalid_b_valid=counts["a_invalid_b_valid"],
        unfinished=counts["total"] - compared,
        only_a=PatchJudgment.objects.filter(run=a).exclude(Exists(in_b)).count(),
        only_b=PatchJudgment.objects.filter(run=b).exclude(Exists(in_a)).count(),
        differing=Paginator(differing, VERDICTS_PER_PAGE).get_page(page),
    )


def compare_datasets() -> list[Dataset]:
    """The datasets with a run to compare, the one of the newest run first."""
    newest = (
        JudgingRun.objects.filter(kind=JudgingRun.Kind.RUN, dataset=OuterRef("pk"))
        .order_by("-created_at", "-id")
        .values("created_at")[:1]
    )
    datasets = Dataset.objects.annotate(newest_run=Subquery(newest)).filter(
        newest_run__isnull=False
    )
    return list(datasets.order_by("-newest_run", "name"))


def compare_choices(*, dataset: Dataset, limit: int = 100) -> list[JudgingRun]:
    """The latest runs of ``dataset`` a lead can pick to compare (only runs of one dataset
    compare), newest first."""
    runs = JudgingRun.objects.filter(kind=JudgingRun.Kind.RUN, dataset=dataset)
    return list(runs.order_by("-created_at", "-id")[:limit])
