"""Load the built-in demo: role groups, demo users, the demo dataset with its labels, a
calibration campaign, a judging run by the offline model, and the starter written judges
(Rule of Minimalism, Non-functional quality), the first of them tested on the demo's quality
ladders and labelled patches by the offline model. Safe to re-run.

``--with-model`` (``make run LLM=local``) also drafts the demo's rubrics and queues a run on
the configured model, such as the local one ``make llm-local`` serves."""

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging.annotations.services import campaign_create
from judging.judges.services import STARTERS, judge_define
from judging.judges.testing import JudgeTestError, judge_test_start
from judging.models import Campaign, Context, JudgeVersion, WrittenJudge
from judging.reports.synthetic import Shape, synthetic_dataset
from judging.runs.services import RunError, run_create
from rubrics.bundle.base import BundleImportError, kind_plural
from rubrics.bundle.services import bundle_import
from rubrics.ladders.services import ladders_build
from rubrics.models import Dataset, Rubric
from rubrics.review.services import rubric_draft_request
from sejury_web.llm import LLMRequest, Provider
from sejury_web.llm.config import llm_settings
from sejury_web.roles import Role, roles_sync
from sejury_web.users import user_create

DEMO_BUNDLE = Path(settings.BASE_DIR) / "rubrics" / "demo" / "bundle.jsonl"
DEMO_DATASET = "Demo"
DEMO_DESCRIPTION = (
    "Six small bugs in several languages, written for this demo, with candidate patches that "
    "cover a correct fix, an alternative correct fix, a test-only change, a symptom-masking "
    "fix and an incomplete fix. Not real data."
)
DEMO_PASSWORD = "sejury-demo"  # noqa: S105 - printed on purpose: local demo accounts only
# Every SE-Jury strategy, so that the calibration page has teams to rank; the offline model,
# whatever provider is configured, so that the demo never spends money. Its output is
# labelled as not an LLM's wherever it is shown.
DEMO_TEAM = "s1a,s1b,s2,s3,s4,s5"
DEMO_RUN_NAME = "Demo: every SE-Jury strategy (offline model)"
# With a real model (--with-model): a team of two one-call strategies, so that a CPU model
# judges the 24 patches in minutes, not hours.
MODEL_TEAM = "s1b,s3"
NO_MODEL = (
    "--with-model needs a model: SEJURY_LLM_PROVIDER is offline (make llm-local prints the "
    "variables of the local one)"
)
DEMO_CAMPAIGN = "Demo calibration round"
DEMO_TESTED_JUDGE = "minimalism"  # the starter the demo tests, so its page has a test card
DEMO_ANNOTATORS = ("annotator1", "annotator2", "annotator3")
REPORT_DEMO_DATASET = "Demo report (synthetic, le2019-sized)"
REPORT_DEMO_SHAPE = Shape(bugs=30, patches_per_bug=5, annotators=37, labels_per_patch=6, seed=1)
REPORT_DEMO_DESCRIPTION = (
    "Synthetic data the size of defects4j-le2019 (150 patches, 37 annotators, 6 labels a"
    " patch, skewed towards INVALID), with two runs of synthetic verdicts: made up by"
    " judging/reports/synthetic.py, not real labels and not an LLM's judgements. It is"
    " here so the agreement report has something to show."
)
DEMO_USERS: list[tuple[str, list[str]]] = [
    ("lead", [Role.LEAD]),
    ("reviewer", [Role.REVIEWER]),
    ("reviewer2", [Role.REVIEWER]),
    ("annotator1", [Role.ANNOTATOR]),
    ("annotator2", [Role.ANNOTATOR]),
    ("annotator3", [Role.ANNOTATOR]),
]


class Command(BaseCommand):
    help = "Create the demo users and import the demo dataset (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--with-model",
            action="store_true",
            help="also draft the demo's rubrics and judge it with the configured model, once",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        roles_sync()
        User = get_user_model()
        for username, roles in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            if user is None:
                user_create(actor=None, username=username, password=DEMO_PASSWORD, roles=roles)
            elif not user.has_usable_password():
                # An annotator first named by an imported label: make it a demo login.
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
        try:
            with DEMO_BUNDLE.open("rb") as source:
                summary = bundle_import(
                    source=source,
                    dataset_name=DEMO_DATASET,
                    actor=None,
                    filename=DEMO_BUNDLE.name,
                )
        except BundleImportError as exc:  # the demo bundle is ours: this is a bug
            raise SystemExit(f"The demo bundle is invalid:\n{exc}") from exc
        if not summary.dataset.description:
            summary.dataset.description = DEMO_DESCRIPTION
            summary.dataset.save(update_fields=["description"])
        counts = ", ".join(
            f"{c.created + c.updated + c.unchanged} {kind_plural(kind)}"
            for kind, c in summary.counts.items()
        )
        self.stdout.write(f"Demo dataset {summary.dataset.name!r}: {counts}.")
        self._demo_campaign(summary.dataset)
        self._demo_run(summary.dataset)
        self._demo_judges()
        self._demo_judge_test(summary.dataset)
        if options.get("with_model"):
            self._model_demo(summary.dataset)
        self._demo_report_data()
        self.stdout.write("\nDemo logins (password for all: " + DEMO_PASSWORD + "):")
        for username, roles in DEMO_USERS:
            self.stdout.write(f"  {username:<12} {', '.join(roles)}")

    def _demo_campaign(self, dataset: Dataset) -> None:
        """A calibration sample for the demo annotators, two labels a patch; once."""
        if dataset.campaigns.exists():
            return
        User = get_user_model()
        campaign = campaign_create(
            dataset=dataset,
            name=DEMO_CAMPAIGN,
            purpose=Campaign.Purpose.CALIBRATION,
            selection=Campaign.Selection.SAMPLE,
            sample_size=12,
            seed=2026,
            annotators=User.objects.filter(username__in=DEMO_ANNOTATORS),
            overlap=2,
            show_rubric=True,
            actor=get_user_model().objects.filter(username="lead").first(),
        )
        self.stdout.write(f"Campaign {campaign.name!r}: {campaign.assignments.count()} labels.")

    def _demo_judges(self) -> None:
        """The starter written judges, by the lead, each once (a lead's later versions are
        left as they are)."""
        lead = get_user_model().objects.filter(username="lead").first()
        for path in sorted(STARTERS.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if not WrittenJudge.objects.filter(name=data["name"]).exists():
                version, _ = judge_define(data=data, actor=lead)
                self.stdout.write(f"Written judge {version.label}: {version.title} (untested).")

    def _demo_judge_test(self, dataset: Dataset) -> None:
        """The Rule of Minimalism's first version tested on the demo (its quality ladders,
        built here, and its labelled patches) with the offline model, once: the worker that
        `make run` starts judges the test's runs and measures them, so the judge's page shows
        real figures, marked as the offline heuristic's."""
        version = JudgeVersion.objects.filter(judge__name=DEMO_TESTED_JUDGE, number=1).first()
        if version is None or version.tests.exists():
            return
        lead = get_user_model().objects.filter(username="lead").first()
        ladders_build(dataset=dataset, actor=lead)
        try:
            test = judge_test_start(
                version=version, dataset=dataset, actor=lead, provider=Provider.OFFLINE
            )
        except JudgeTestError as error:  # an edited demo dataset: said, not a traceback
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Judge test {test.pk} queued: {version.label} on the demo's ladders and"
            f" {test.patch_count} labelled patches, offline model."
        )

    def _model_demo(self, dataset: Dataset) -> None:
        """The demo's rubrics drafted, and a run queued, on the configured model: once."""
        llm = llm_settings()
        if llm.provider == Provider.OFFLINE:
            raise CommandError(NO_MODEL)
        target = llm.target(LLMRequest(purpose="demo", messages=(), schema={}))
        lead = get_user_model().objects.filter(username="lead").first()
        drafted = Rubric.objects.filter(bug__dataset=dataset, variant=Rubric.Variant.TEMPLATED)
        bugs = list(dataset.bugs.exclude(pk__in=drafted.values("bug_id")))
        if bugs:
            rubric_draft_request(
                bugs=bugs,
                variant=Rubric.Variant.TEMPLATED,
                actor=lead,
                provider=target.provider,
                model=target.model,
            )
            self.stdout.write(f"{len(bugs)} rubric drafts queued on {target.model}.")
        name = f"Demo: {MODEL_TEAM} on {target.model}"
        if not dataset.judging_runs.filter(name=name).exists():
            try:
                run = run_create(
                    actor=lead,
                    dataset=dataset,
                    strategies=MODEL_TEAM,
                    context=Context.REFERENCE,
                    provider=target.provider,
                    model=target.model,
                    name=name,
                )
            except RunError as error:  # RunNotReady too: see _demo_run
                raise CommandError(str(error)) from None
            self.stdout.write(f"Judging run {run.pk} queued: team {MODEL_TEAM}, {target.model}.")

    def _demo_report_data(self) -> None:
        """A synthetic dataset the size of defects4j-le2019, labelled and judged, so the
        agreement report has charts to show at once (its runs are marked not an LLM's)."""
        if Dataset.objects.filter(name=REPORT_DEMO_DATASET).exists():
            return
        dataset = synthetic_dataset(REPORT_DEMO_DATASET, REPORT_DEMO_SHAPE)
        dataset.description = REPORT_DEMO_DESCRIPTION
        dataset.save(update_fields=["description"])
        self.stdout.write(
            f"Demo dataset {dataset.name!r}: {dataset.patches.count()} synthetic patches with"
            " labels and two runs of synthetic verdicts, for the agreement report."
        )

    def _demo_run(self, dataset: Dataset) -> None:
        """A judging run of the demo dataset, judged by the worker that `make run` starts."""
        if dataset.judging_runs.exists():
            return
        try:
            run = run_create(
                actor=get_user_model().objects.filter(username="lead").first(),
                dataset=dataset,
                strategies=DEMO_TEAM,
                context=Context.REFERENCE,
                provider="offline",
                name=DEMO_RUN_NAME,
            )
        except RunError as error:
            # The demo's runs read the reference context and every demo bug has its reference
            # fix, so only an edited demo dataset is refused: said as the command's error,
            # with what the patches lack (RunNotReady), not as a traceback.
            raise CommandError(str(error)) from None
        self.stdout.write(f"Judging run {run.pk} queued: team {DEMO_TEAM}, offline model.")
