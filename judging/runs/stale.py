"""Stale rubric verdicts and what re-judging them changed: reads for the run page, the
``judge --stale`` command and the re-judge service.

The rubric judge's result records the rubric revision it was shown
(``StrategyResult.rubric_revision``), and so does a written judge's whose template shows
``{{ rubric }}`` (any member whose strategy ``uses_rubric``). In a run whose context is the
golden rubric, a result is *stale* once a newer revision of that rubric has been confirmed
golden (``Rubric.golden_revision``): it judged against a standard the reviewers have since
replaced. Draft, free-form and pinned-revision runs show a rubric that does not change
(revision 0, or the one pinned), so they never go stale; nor does a result that recorded no
revision (written before revisions were recorded, or by a member that reads no rubric).
A newer version of a written judge makes nothing stale: a run names the version it judged
with (``minimalism@2``), and judging again with another would change its team.

Re-judging moves each stale result to ``ReplacedResult`` and judges the member again; the
page then lists what flipped. Every read here costs a fixed number of queries, whatever the
number of patches.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)

from judging.models import Context, JudgingRun, PatchJudgment, ReplacedResult, StrategyResult

FLIPS_SHOWN = 50

# A result judged with a revision older than its rubric's golden one.
_OLDER_THAN_GOLDEN = Q(
    status=StrategyResult.Status.DONE,
    rubric_revision__isnull=False,
    rubric_revision__rubric__golden_revision__number__gt=F("rubric_revision__number"),
)


def can_go_stale(run: JudgingRun) -> bool:
    """Only the golden context's rubric changes under a run."""
    return run.context == Context.GOLDEN


def stale_results(run: JudgingRun) -> QuerySet[StrategyResult]:
    """The run's stale results: judged with an older revision than their rubric's golden."""
    if not can_go_stale(run):
        return StrategyResult.objects.none()
    return StrategyResult.objects.filter(_OLDER_THAN_GOLDEN, judgment__run=run)


def has_stale_result() -> Exists:
    """For a ``PatchJudgment`` query: whether the patch has a stale result (filter it only in
    runs that ``can_go_stale``)."""
    return Exists(StrategyResult.objects.filter(_OLDER_THAN_GOLDEN, judgment=OuterRef("pk")))


def stale_count(run: JudgingRun) -> int:
    """How many patches of the run have a stale rubric verdict (one query; none if the run
    cannot go stale)."""
    if not can_go_stale(run):
        return 0
    # A patch counts once, though two of its members read the rubric (the rubric judge and a
    # written judge).
    return stale_results(run).values("judgment_id").distinct().count()


def stale_counts_by_run() -> dict[int, int]:
    """Run id → how many of its patches have a stale rubric verdict, for every judging run
    that can go stale and has any (one query)."""
    rows = (
        StrategyResult.objects.filter(
            _OLDER_THAN_GOLDEN,
            judgment__run__context=Context.GOLDEN,
            judgment__run__kind=JudgingRun.Kind.RUN,
        )
        .order_by()
        .values("judgment__run_id")
        .annotate(n=Count("judgment_id", distinct=True))
        .values_list("judgment__run_id", "n")
    )
    return dict(rows)


@dataclass(frozen=True)
class Rejudged:
    """One patch whose member was judged again: its verdicts before and after, and why."""

    judgment_id: int
    patch_key: str
    bug_key: str
    strategy: str
    reason: str  # why it was judged again, as a page says it
    replaced_at: datetime
    old_verdict: str  # the team's
    new_verdict: str  # "" while the patch is judged again, or if it failed
    old_member_verdict: str  # the member's own (the rubric judge's VALID/INVALID)
    new_member_verdict: str
    old_revision: int | None  # the rubric revision numbers the member judged with
    new_revision: int | None

    @property
    def flipped(self) -> bool:
        """The team's verdict changed."""
        return bool(self.new_verdict) and self.new_verdict != self.old_verdict

    @property
    def member_flipped(self) -> bool:
        return bool(self.new_member_verdict) and self.new_member_verdict != self.old_member_verdict


@dataclass(frozen=True)
class RejudgeSummary:
    rejudged: int  # patches with a replaced result, over every re-judge of the run
    pending: int  # of those, patches still being judged again
    flipped: int  # patches whose team's verdict changed
    member_flipped: int  # replaced results whose member's own verdict changed
    changed: int  # replaced results where either changed
    flips: list[Rejudged]  # the first FLIPS_SHOWN of those, by patch key (a row per member)

    @property
    def more(self) -> int:
        """Changes not listed."""
        return self.changed - len(self.flips)


def _with_outcome(run: JudgingRun) -> QuerySet[ReplacedResult]:
    """The run's replaced results, each with what replaced it: the next replaced result of
    the same member and patch if it was replaced again, otherwise the current one."""
    later = ReplacedResult.objects.filter(
        judgment=OuterRef("judgment"), strategy=OuterRef("strategy"), pk__gt=OuterRef("pk")
    ).order_by("pk")
    current = StrategyResult.objects.filter(
        judgment=OuterRef("judgment"), strategy=OuterRef("strategy")
    )
    replaced_again = Exists(later)
    return ReplacedResult.objects.filter(judgment__run=run).annotate(
        new_verdict=Case(
            When(replaced_again, then=Subquery(later.values("team_verdict")[:1])),
            default=F("judgment__verdict"),
            output_field=CharField(),
        ),
        new_member_verdict=Case(
            When(replaced_again, then=Subquery(later.values("verdict")[:1])),
            default=Subquery(current.values("verdict")[:1]),
            output_field=CharField(),
        ),
        new_revision=Case(
            When(replaced_again, then=Subquery(later.values("rubric_revision__number")[:1])),
            default=Subquery(current.values("rubric_revision__number")[:1]),
            output_field=IntegerField(),
        ),
        old_revision=F("rubric_revision__number"),
    )


def rejudge_summary(run: JudgingRun) -> RejudgeSummary | None:
    """What re-judging changed in the run, or None if nothing of it was ever re-judged.

    Two queries (the counts, and the first ``FLIPS_SHOWN`` changes); none for a run that was
    never resumed, since every re-judge is a new generation.
    """
    if run.generation == 0:
        return None
    rows = _with_outcome(run)
    pending = Q(judgment__status=PatchJudgment.Status.PENDING)
    # Changed: there is a new verdict (the patch is not being judged again) and it differs.
    team = ~Q(new_verdict="") & ~Q(new_verdict=F("team_verdict"))
    member = ~Q(new_member_verdict="") & ~Q(new_member_verdict=F("verdict"))
    # Patches count once, though two of their members were judged again.
    counts = rows.aggregate(
        rejudged=Count("judgment", distinct=True),
        pending=Count("judgment", filter=pending, distinct=True),
        flipped=Count("judgment", filter=team, distinct=True),
        member_flipped=Count("pk", filter=member),
        changed=Count("pk", filter=team | member),
    )
    if not counts["rejudged"]:
        return None
    changed = (
        rows.filter(team | member)
        .select_related("judgment__patch__bug")
        .only(
            "id",
            "judgment_id",
            "strategy",
            "reason",
            "replaced_at",
            "verdict",
            "team_verdict",
            "rubric_revision_id",
            "judgment__patch__key",
            "judgment__patch__bug__key",
        )
        .order_by("judgment__patch__sort_key", "pk")[:FLIPS_SHOWN]
    )
    flips = [
        Rejudged(
            judgment_id=row.judgment_id,
            patch_key=row.judgment.patch.key,
            bug_key=row.judgment.patch.bug.key,
            strategy=row.strategy,
            reason=row.get_reason_display(),
            replaced_at=row.replaced_at,
            old_verdict=row.team_verdict,
            new_verdict=row.new_verdict or "",  # type: ignore[attr-defined]
            old_member_verdict=row.verdict,
            new_member_verdict=row.new_member_verdict or "",  # type: ignore[attr-defined]
            old_revision=row.old_revision,  # type: ignore[attr-defined]
            new_revision=row.new_revision,  # type: ignore[attr-defined]
        )
        for row in changed
    ]
    return RejudgeSummary(
        rejudged=counts["rejudged"],
        pending=counts["pending"],
        flipped=counts["flipped"],
        member_flipped=counts["member_flipped"],
        changed=counts["changed"],
        flips=flips,
    )
