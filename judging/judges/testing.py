"""*Test this judge*: a written judge's version measured before a lead trusts it.

A test of a version on a dataset has two parts, each measured by code the product already
has, never by statistics of its own:

- **The quality ladders** of the dataset (``rubrics.ladders``, built beforehand): the version
  alone judges every ladder patch (``refine_start``, which reuses a run it already made), and
  the evaluator tester (``judging.refine``) gives its ordering alignment and Kendall's τ-b,
  each with its bootstrap interval over bugs.
- **The labelled patches** (those with a human consensus under the dataset's rule): the
  version alone, the dataset's *current team* and the three match baselines (``bleu``,
  ``chrf``, ``edit``) each judge the same patches (those every one of them can judge), and
  the agreement report (``judging.reports``) gives each one's accuracy, Cohen's κ, Gwet's AC1
  and MCC against the consensus with their bootstrap intervals (B_full). These runs are of
  the kind ``JudgingRun.Kind.TEST``: kept out of the dataset's run lists, its report's default
  runs and its patches' verdicts, so a test changes nothing a lead reads of the dataset.

The current team is the one the dataset's newest calibration chose, else the team of its
newest judging run, else the new-run form's default team (without the rubric judge while the
dataset has no golden rubric).

``judge_test_start`` queues the runs and the task that measures them once they end
(``judge_test_advance``, which says when to look again while a run is still going). A test
whose run was cancelled or deleted fails, saying which; a worker that dies mid-test is
resumed by the next one (``judge_tests_resume_unfinished``). Measured, the test keeps its
figures and the version becomes *tested* (a trusted one stays trusted); only then may a lead
trust it (``services.judge_version_status_set``).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet

from judging.consensus.rules import dataset_consensus
from judging.models import Calibration, Context, JudgeTest, JudgeVersion, JudgingRun
from judging.refine.services import Configuration, default_context, refine_start
from judging.runs.services import RunError, run_create, run_validate
from judging.tasks import judge_test_advance_task
from rubrics.ladders.services import DERIVATION
from rubrics.models import Dataset, Patch, Rubric
from sejury_web.durable import enqueue_on_commit

from .measuring import JUDGE, LADDER, POLL_SECONDS, TEAM

TEST_RUN_PREFIX = "Test of "
DEFAULT_TEAM = ("rubric", "s1b", "s3")  # the new-run form's, when nothing else says
# ... without the rubric judge while the dataset has no golden rubric to show it.
REFERENCE_TEAM = ("s1b", "s3")
BASELINE_NAMES = ("bleu", "chrf", "edit")

NOT_A_SOURCE = "{name} is a derived dataset: test a judge on the dataset its ladders come from"
NO_LADDERS = "{name} has no quality ladders yet: build them first (Ladders → Build ladders)"
NO_LABELS = "no patch of {name} has a human consensus yet: label some first"
NO_COMMON = "no labelled patch of {name} can be judged by {label}, the team and the baselines"


class JudgeTestError(ValueError):
    """A test that cannot start; the message says why."""


@dataclass(frozen=True)
class CurrentTeam:
    team: tuple[str, ...]
    context: str
    source: str  # where it comes from, as the card says it


def current_team(dataset: Dataset) -> CurrentTeam:
    """The team the dataset judges with now: its newest calibration's, else its newest
    (non-test) run's, else the new-run form's default."""
    calibration = (
        Calibration.objects.filter(campaign__dataset=dataset).select_related("run").first()
    )
    if calibration is not None:
        team = tuple(calibration.team)
        return CurrentTeam(team, calibration.run.context, f"calibration {calibration.pk}")
    run = (
        dataset.judging_runs.filter(kind=JudgingRun.Kind.RUN)
        .exclude(status=JudgingRun.Status.CANCELLED)
        .first()
    )
    if run is not None:
        return CurrentTeam(tuple(run.strategies), run.context, f"run {run.pk}")
    if Rubric.objects.filter(bug__dataset=dataset, golden_revision__isnull=False).exists():
        return CurrentTeam(DEFAULT_TEAM, default_context(DEFAULT_TEAM), "the default team")
    return CurrentTeam(
        REFERENCE_TEAM, Context.REFERENCE, "the default team without the rubric judge"
    )


def labelled_patches(dataset: Dataset) -> QuerySet[Patch]:
    """The dataset's patches with a human consensus (under its rule)."""
    ids = [pk for pk, found in dataset_consensus(dataset).items() if found.consensus]
    return dataset.patches.filter(pk__in=ids)


def ladder_of(dataset: Dataset) -> Dataset | None:
    return Dataset.objects.filter(derived_from=dataset, derivation=DERIVATION).first()


def _labelled_plan(
    dataset: Dataset, version: JudgeVersion, provider: str, model: str
) -> tuple[dict[str, tuple[tuple[str, ...], str]], CurrentTeam, list[Patch]]:
    """Each labelled-patch run's team and context, and the patches all of them can judge."""
    team = current_team(dataset)
    label = version.label
    plan = {
        JUDGE: ((label,), default_context((label,))),
        TEAM: (team.team, team.context),
        **{name: ((name,), Context.REFERENCE) for name in BASELINE_NAMES},
    }
    patches = labelled_patches(dataset)
    if not patches.exists():
        raise JudgeTestError(NO_LABELS.format(name=dataset.name))
    for role, (strategies, context) in plan.items():
        try:
            checked = run_validate(
                dataset=dataset,
                strategies=list(strategies),
                context=context,
                patches=patches,
                provider=provider,
                model=model,
                only_ready=True,
            )
        except RunError as error:
            raise JudgeTestError(f"{role} ({','.join(strategies)}): {error}") from None
        patches = patches.filter(checked.preflight.ready_filter)
    chosen = list(patches.order_by("pk"))
    if not chosen:
        raise JudgeTestError(NO_COMMON.format(name=dataset.name, label=label))
    return plan, team, chosen


def judge_test_start(
    *,
    version: JudgeVersion,
    dataset: Dataset,
    actor: User | None,
    provider: str = "",
    model: str = "",
) -> JudgeTest:
    """Start testing ``version`` on ``dataset`` (its ladders and its labelled patches); a test
    of the same version and dataset still running is returned as it is. ``JudgeTestError``
    says why a test cannot start, before anything is written."""
    if dataset.derived_from_id is not None:
        raise JudgeTestError(NOT_A_SOURCE.format(name=dataset.name))
    running = version.tests.filter(dataset=dataset, status=JudgeTest.Status.RUNNING).first()
    if running is not None:
        return running
    ladder = ladder_of(dataset)
    if ladder is None or not ladder.patches.exists():
        raise JudgeTestError(NO_LADDERS.format(name=dataset.name))
    plan, team, patches = _labelled_plan(dataset, version, provider, model)
    label = version.label
    with transaction.atomic():
        try:
            configuration = Configuration((label,), default_context((label,)))
            ((ladder_run, _),) = refine_start(
                ladder=ladder,
                configurations=[configuration],
                provider=provider,
                model=model,
                actor=actor,
            )
            runs = {LADDER: ladder_run.pk}
            for role, (strategies, context) in plan.items():
                run = run_create(
                    dataset=dataset,
                    strategies=list(strategies),
                    context=context,
                    patches=patches,
                    provider=provider,
                    model=model,
                    name=f"{TEST_RUN_PREFIX}{label}: {role}",
                    actor=actor,
                    kind=JudgingRun.Kind.TEST,
                )
                runs[role] = run.pk
        except RunError as error:
            raise JudgeTestError(str(error)) from None
        test = JudgeTest.objects.create(
            version=version,
            dataset=dataset,
            runs=runs,
            team=list(team.team),
            patch_count=len(patches),
            created_by=actor if actor and actor.pk else None,
            figures={"team_source": team.source, "team_context": team.context},
        )
        enqueue_on_commit(judge_test_advance_task, test.pk, countdown=POLL_SECONDS)
    return test


def judge_tests_resume_unfinished() -> list[int]:
    """Queue again the measuring of every test still running (a worker starting)."""
    ids = list(
        JudgeTest.objects.filter(status=JudgeTest.Status.RUNNING).values_list("pk", flat=True)
    )
    for test_id in ids:
        judge_test_advance_task.delay(test_id)
    return ids


def tests_of(version: JudgeVersion) -> Iterable[JudgeTest]:
    return version.tests.select_related("dataset")
