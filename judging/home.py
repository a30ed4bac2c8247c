"""What the home page shows of judging (``sejury_web.home``): a lead's running runs, the
patches waiting for adjudication and the stale verdicts; an annotator's campaigns with what
remains (their own progress only: nothing of a verdict or of another's label). Each item costs
a fixed number of queries, whatever the number of runs, patches or labels.

``JudgingConfig.ready()`` registers the sections.
"""

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.urls import reverse

from judging.annotations.selectors import annotator_campaigns
from judging.consensus.rules import MAJORITY_SHARE, MIN_DECISIVE_LABELS, MIN_MAJORITY_LABELS
from judging.models import Adjudication, Annotation, JudgingRun, Label
from judging.runs.selectors import runs_judged_counts
from judging.runs.stale import stale_counts_by_run
from rubrics.models import ConsensusRule, Dataset, Patch
from sejury_web.home import HOME_ROWS, HomeItem, HomeRow, HomeSection, home_section_register
from sejury_web.roles import Role

UNFINISHED_RUN = [JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('ch') else 's'}"


# -- a lead's -------------------------------------------------------------------------------


def running_runs_item() -> HomeItem:
    """Runs queued or running, newest first, each with its share of patches judged."""
    runs = JudgingRun.objects.filter(kind=JudgingRun.Kind.RUN, status__in=UNFINISHED_RUN)
    shown = list(runs.select_related("dataset").order_by("-created_at", "-id")[:HOME_ROWS])
    counts = runs_judged_counts(shown)
    rows = []
    for run in shown:
        total, done = counts.get(run.pk, (0, 0))
        rows.append(
            HomeRow(
                f"{run.name or run} ({run.dataset.name})",
                reverse("judging:run_detail", args=[run.pk]),
                detail=f"{done} of {total} patches judged · {run.get_status_display().lower()}",
                percent=round(100 * done / total) if total else 0,
            )
        )
    return HomeItem(
        "runs",
        "Judging runs in progress",
        runs.count(),
        reverse("judging:run_list"),
        "Judging runs",
        "No judging run is in progress.",
        tuple(rows),
    )


def _labelled(condition: Q) -> QuerySet[Annotation, Any]:
    """The ids of the patches whose labels meet ``condition``, on each patch's count of VALID
    (``valid``), INVALID (``invalid``) and both (``decisive``), and the shares a majority
    compares (``valid_share``, ``invalid_share`` against ``needed``): one pass over the labels,
    grouped by patch (counting each patch's labels in a subquery of its own, several times
    a patch, took 75 ms of a 10,000-patch home page)."""
    numerator, denominator = MAJORITY_SHARE
    return (
        Annotation.objects.order_by()
        .values("patch_id")
        .annotate(
            valid=Count("pk", filter=Q(label=Label.VALID)),
            invalid=Count("pk", filter=Q(label=Label.INVALID)),
        )
        .annotate(
            decisive=F("valid") + F("invalid"),
            valid_share=F("valid") * denominator,
            invalid_share=F("invalid") * denominator,
        )
        .annotate(needed=F("decisive") * numerator)
        .filter(condition)
        .values("patch_id")
    )


def adjudication_waiting() -> QuerySet[Patch]:
    """The patches a lead's adjudication waits for, under each dataset's rule (the
    adjudication queue's *waiting*: labelled, neither unanimous nor, under the majority rule,
    a majority's, and not adjudicated), as one query on the database."""
    unanimous = Q(decisive__gte=MIN_DECISIVE_LABELS) & (Q(valid=0) | Q(invalid=0))
    majority = Q(decisive__gte=MIN_MAJORITY_LABELS) & (
        Q(valid_share__gte=F("needed")) | Q(invalid_share__gte=F("needed"))
    )
    return (
        Patch.objects.filter(pk__in=_labelled(~unanimous))
        .exclude(Exists(Adjudication.objects.filter(patch_id=OuterRef("pk"))))
        .exclude(Q(dataset__consensus_rule=ConsensusRule.MAJORITY) & Q(pk__in=_labelled(majority)))
    )


def adjudication_item() -> HomeItem:
    """How many patches wait for adjudication, in all and per dataset (one query)."""
    per_dataset = dict(
        adjudication_waiting()
        .order_by()
        .values("dataset_id")
        .annotate(n=Count("id"))
        .values_list("dataset_id", "n")
    )
    first = sorted(per_dataset, key=lambda pk: -per_dataset[pk])[:HOME_ROWS]
    datasets = {d.pk: d for d in Dataset.objects.filter(pk__in=first)} if first else {}
    rows = [
        HomeRow(
            datasets[pk].name,
            reverse("judging:adjudication_queue", args=[datasets[pk].slug]),
            detail=_plural(per_dataset[pk], "patch") + " waiting",
        )
        for pk in first
        if pk in datasets
    ]
    return HomeItem(
        "adjudication",
        "Patches waiting for adjudication",
        sum(per_dataset.values()),
        reverse("judging:adjudication_index"),
        "Adjudication",
        "No patch waits for adjudication.",
        tuple(rows),
        note="Annotators disagree, or too few gave a decisive label: settle the consensus.",
        rows_total=len(per_dataset),
    )


def stale_item() -> HomeItem:
    """Runs with rubric verdicts judged with a revision older than the golden one."""
    per_run = stale_counts_by_run()
    first = sorted(per_run, key=lambda pk: -pk)[:HOME_ROWS]
    runs = (
        {r.pk: r for r in JudgingRun.objects.filter(pk__in=first).select_related("dataset")}
        if first
        else {}
    )
    rows = [
        HomeRow(
            f"{runs[pk].name or runs[pk]} ({runs[pk].dataset.name})",
            reverse("judging:run_detail", args=[pk]),
            detail=_plural(per_run[pk], "stale verdict"),
        )
        for pk in first
        if pk in runs
    ]
    return HomeItem(
        "stale",
        "Stale verdicts",
        sum(per_run.values()),
        reverse("judging:run_list"),
        "Judging runs",
        "No verdict is stale.",
        tuple(rows),
        note="Judged with an older revision than the rubric's golden one: re-judge them on "
        "the run's page.",
        rows_total=len(per_run),
    )


def lead_items(user: User) -> list[HomeItem]:
    return [running_runs_item(), adjudication_item(), stale_item()]


# -- an annotator's -------------------------------------------------------------------------


def annotator_items(user: User) -> list[HomeItem]:
    """The annotator's open campaigns with labels left, from their own assignments and own
    labels only (``annotator_campaigns``): never a verdict or another annotator's label."""
    rows = annotator_campaigns(annotator=user)
    left = [r for r in rows if r.campaign.is_open and not r.progress.finished]
    shown = [
        HomeRow(
            f"{r.campaign.name} ({r.campaign.dataset_name})",
            reverse("judging:annotate_queue", args=[r.campaign.pk]),
            detail=f"{r.progress.done} of {r.progress.assigned} labelled, "
            f"{r.progress.assigned - r.progress.done} left",
            percent=r.progress.percent,
            action="Continue",
        )
        for r in left
    ]
    remaining = sum(r.progress.assigned - r.progress.done for r in left)
    return [
        HomeItem(
            "campaigns",
            "Your campaigns with patches to label",
            len(left),
            reverse("judging:annotate_campaigns"),
            "My campaigns",
            "No campaign has patches left for you to label.",
            tuple(shown),
            note=f"{_plural(remaining, 'patch')} to label in all.",
        )
    ]


def home_sections_register() -> None:
    home_section_register(HomeSection(Role.LEAD, "judging", lead_items, order=10))
    home_section_register(HomeSection(Role.ANNOTATOR, "judging", annotator_items, order=10))
