import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse

from rubrics.models import Bug, ConsensusRule, Dataset, Patch, RubricRevision


class Label(models.TextChoices):
    VALID = "VALID", "Valid"
    INVALID = "INVALID", "Invalid"
    # The annotator could not decide; agreement statistics treat it as missing.
    UNSURE = "UNSURE", "Unsure"


class Annotation(models.Model):
    """An annotator's current label of a patch: one per annotator and patch."""

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported from a bundle"
        UI = "ui", "Given in the app"

    patch = models.ForeignKey(Patch, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations"
    )
    label = models.CharField(max_length=10, choices=Label.choices)
    note = models.TextField(blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.UI)
    # The campaign's dimensions the annotator rated with this label: {name: rating}, each
    # rating an integer on that dimension's scale (``Campaign.dimensions``); a dimension
    # left unrated is absent.
    ratings = models.JSONField(default=dict, blank=True)
    # The campaign the label was last given in (none for imported labels): once it closes,
    # the label is final.
    campaign = models.ForeignKey(
        "Campaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="annotations"
    )
    seconds_spent = models.FloatField(
        default=0.0, help_text="Time on the patch's page, summed over every time it was labelled."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["patch", "annotator"]
        constraints = [
            models.UniqueConstraint(
                fields=["patch", "annotator"], name="one_current_label_per_annotator_and_patch"
            )
        ]
        # A dataset's newest label (``consensus_version_parts``), asked by every report section
        # and adjudication queue request, read from the index alone.
        indexes = [models.Index(fields=["patch", "updated_at"], name="annotation_patch_updated")]

    def __str__(self) -> str:
        return f"{self.patch} — {self.annotator}: {self.label}"


class AnnotationRevision(models.Model):
    """Every value an annotation took, oldest first: a changed label keeps its history."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="revisions")
    label = models.CharField(max_length=10, choices=Label.choices)
    note = models.TextField(blank=True)
    ratings = models.JSONField(default=dict, blank=True)  # as ``Annotation.ratings``
    campaign = models.ForeignKey(
        "Campaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seconds_spent = models.FloatField(default=0.0, help_text="Time on the page for this value.")
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotation", "recorded_at", "id"]

    def __str__(self) -> str:
        return f"{self.annotation_id}: {self.label} at {self.recorded_at:%Y-%m-%d %H:%M}"


class Campaign(models.Model):
    """A lead's request for labels: which patches, by whom, how many labels each."""

    class Purpose(models.TextChoices):
        CALIBRATION = "calibration", "Calibration (pick a team)"
        BENCHMARK = "benchmark", "Benchmark (measure judges)"

    class Selection(models.TextChoices):
        ALL = "all", "All patches"
        SAMPLE = "sample", "A random sample"
        FILTER = "filter", "A filter"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=200)
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.BENCHMARK)
    selection = models.CharField(max_length=10, choices=Selection.choices, default=Selection.ALL)
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True, help_text="The sample's random seed.")
    # The filter as the lead gave it, e.g. {"bug_type": "...", "source": "...", "patches": [...]}.
    filters = models.JSONField(default=dict, blank=True)
    overlap = models.PositiveSmallIntegerField(default=2, help_text="Labels per patch (k).")
    show_rubric = models.BooleanField(default=True, help_text="Annotators see the golden rubric.")
    # Named dimensions annotators rate besides the label, each on an integer ordinal scale:
    # [{"name": "maintainability", "low": 1, "high": 5}, ...] (``annotations.dimensions``).
    dimensions = models.JSONField(default=list, blank=True)
    routed_from = models.ForeignKey(
        "JudgingRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="routed_campaigns",
        help_text="The run whose least certain verdicts this campaign asks humans about.",
    )
    consensus_rule = models.CharField(
        max_length=16,
        choices=ConsensusRule.choices,
        default=ConsensusRule.UNANIMOUS,
        help_text="When the campaign's labels are a patch's consensus without a lead.",
    )
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="campaigns")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        """The lead's page of the campaign (annotators reach theirs through their queue)."""
        return reverse("judging:campaign_detail", args=[self.pk])

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


class Assignment(models.Model):
    """One patch to label for one annotator in a campaign, at a place in their queue."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    patch = models.ForeignKey(Patch, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    position = models.PositiveIntegerField(help_text="1-based place in the annotator's queue.")

    class Meta:
        ordering = ["campaign", "annotator", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "patch", "annotator"], name="one_assignment_per_patch"
            ),
            models.UniqueConstraint(
                fields=["campaign", "annotator", "position"], name="one_patch_per_queue_place"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign}: {self.patch} → {self.annotator}"


class DisagreementTheme(models.TextChoices):
    """Why annotators disagreed on a patch (paper 004 §5.2.1)."""

    OVERLOOKED_REQUIREMENTS = "overlooked_requirements", "Overlooked requirements"
    UNNECESSARY_CHANGES = "unnecessary_changes", "Unnecessary changes"
    RUBRIC_AMBIGUITY = "rubric_ambiguity", "Rubric ambiguity"
    CORRECTNESS_ASSESSMENT = "correctness_assessment", "Correctness assessment"
    OTHER = "other", "Other"


class Adjudication(models.Model):
    """A lead's consensus label for a patch whose labels were not unanimous.

    Unanimous patches need none: their consensus is computed from the labels
    (``judging.consensus``). An adjudication, once recorded, is the patch's consensus.
    """

    patch = models.OneToOneField(Patch, on_delete=models.CASCADE, related_name="adjudication")
    label = models.CharField(max_length=10, choices=Label.choices[:2])
    themes = models.JSONField(default=list, blank=True, help_text="DisagreementTheme values.")
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.patch}: {self.label} (adjudicated)"


class Calibration(models.Model):
    """A team chosen for a dataset from a calibration campaign's consensus and a run."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="calibrations")
    run = models.ForeignKey("JudgingRun", on_delete=models.CASCADE, related_name="calibrations")
    team = models.JSONField(help_text="The chosen team: strategy names, in registry order.")
    # Every team evaluated, best first: [{"team": [...], "kendall": ..., ...}, ...].
    ranking = models.JSONField(default=list)
    patch_count = models.PositiveIntegerField(default=0)
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.campaign}: team {', '.join(self.team)}"


class Context(models.TextChoices):
    """What the judge is shown besides the bug and the candidate (paper 004, Table 6)."""

    GOLDEN = "golden", "Golden rubric"
    DRAFT = "draft", "Draft rubric"
    FREE_FORM = "free_form", "Free-form rubric"
    REFERENCE = "reference", "Reference patch only"
    NONE = "none", "Nothing"
    # One pinned rubric revision: the streamlined review of paper 004 §8. Not offered to
    # leads; a preview run sets it together with ``JudgingRun.rubric_revision``.
    REVISION = "revision", "A rubric revision"


class JudgingRun(models.Model):
    """One team judging a set of patches with one model and one context, on Celery."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"

    class Kind(models.TextChoices):
        RUN = "run", "Judging run"
        PREVIEW = "preview", "Rubric preview"
        # A written judge's test on labelled patches (``judging.judges.testing``): the judge,
        # the current team and the baselines beside it, kept out of the dataset's run lists,
        # its report's default runs and its patches' verdicts.
        TEST = "test", "Judge test"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="judging_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.RUN)
    name = models.CharField(max_length=200, blank=True)
    strategies = models.JSONField(help_text="The team: strategy names, in order.")
    context = models.CharField(max_length=16, choices=Context.choices)
    rubric_revision = models.ForeignKey(
        RubricRevision, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    provider = models.CharField(max_length=16)
    model = models.CharField(max_length=128)
    scale_lo = models.FloatField(default=0.0)
    scale_hi = models.FloatField(default=100.0)
    threshold = models.FloatField(default=50.0, help_text="On the scale lo–hi.")
    reducer = models.CharField(
        max_length=32,
        default="mean",
        help_text="How the team's scores become one (judging.strategies.reducers).",
    )
    # How hard a reasoning model thinks: an effort ("low", "high") or a thinking budget in
    # tokens ("2048"); "" leaves the model's default (sejury_web.llm.models_table).
    reasoning = models.CharField(max_length=16, blank=True)
    # Judged through the provider's batch API (half the price, answers within 24 h).
    batch = models.BooleanField(default=False)
    # What the run was expected to cost when it was created (judging.runs.forecast), shown
    # beside the bill once it ends; {} for runs created before forecasts.
    forecast = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # Bumped by every resume: a task of an older generation stops before its next call, so
    # a message redelivered after a resume never judges a patch twice at once.
    generation = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The pipeline's webhook (judging.runs.webhooks): called once each time the run ends.
    webhook_url = models.URLField(
        max_length=2000, blank=True, help_text="Called with a signed POST when the run ends."
    )
    # The scheme and host the run was created through ("https://sejury.example"): the base
    # of the webhook body's absolute URLs when SEJURY_BASE_URL is not set.
    webhook_origin = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("run_judging", "Can start, cancel and resume judging runs")]

    def __str__(self) -> str:
        return f"Run {self.pk} ({', '.join(self.strategies)}; {self.context})"

    def get_absolute_url(self) -> str:
        return reverse("judging:run_detail", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class WebhookDelivery(models.Model):
    """One call of a run's webhook: the run ended (finished or cancelled) under one generation.

    Unique per run and generation, so two workers ending the run at once create one; a run
    resumed and ended again (a new generation) is called again, with its new counts.
    ``attempts`` counts the POSTs made; the body is fixed at the first, so that every retry
    sends the same bytes under the same ``delivery_id``.
    """

    class Event(models.TextChoices):
        FINISHED = "run.finished", "Run finished"
        CANCELLED = "run.cancelled", "Run cancelled"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(JudgingRun, on_delete=models.CASCADE, related_name="webhook_deliveries")
    generation = models.PositiveIntegerField()
    event = models.CharField(max_length=20, choices=Event.choices)
    url = models.URLField(max_length=2000)
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    body = models.TextField(blank=True, help_text="The JSON sent, fixed at the first attempt.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "generation"], name="one_webhook_delivery_per_run_generation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.run}: {self.event} → {self.status}"


class PatchJudgment(models.Model):
    """A run's verdict on one patch: the team's combined score and its members' results."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(JudgingRun, on_delete=models.CASCADE, related_name="judgments")
    patch = models.ForeignKey(Patch, on_delete=models.CASCADE, related_name="judgments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    score = models.FloatField(null=True, blank=True, help_text="On the run's scale.")
    verdict = models.CharField(max_length=10, choices=Label.choices[:2], blank=True)
    spread = models.FloatField(
        null=True, blank=True, help_text="Highest minus lowest member score, on 0–100."
    )
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "patch"]
        constraints = [
            models.UniqueConstraint(fields=["run", "patch"], name="one_judgment_per_run_and_patch")
        ]
        indexes = [models.Index(fields=["run", "status"], name="judgment_run_status")]

    def __str__(self) -> str:
        return f"{self.run} — {self.patch}: {self.verdict or self.status}"

    def get_absolute_url(self) -> str:
        return reverse("judging:verdict_detail", args=[self.run_id, self.pk])


class StrategyResult(models.Model):
    """One member's result on one patch, written once: a resumed run never repeats it."""

    class Status(models.TextChoices):
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    judgment = models.ForeignKey(PatchJudgment, on_delete=models.CASCADE, related_name="results")
    strategy = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices)
    score = models.FloatField(null=True, blank=True, help_text="0–100.")
    verdict = models.CharField(max_length=10, blank=True, help_text="The rubric judge's label.")
    reasoning = models.TextField(blank=True)
    # Every step's parsed answer by step name, e.g. {"assess": {...}, "rethink": {...}}.
    answers = models.JSONField(default=dict)
    prompt_version = models.CharField(max_length=40)
    call_ids = models.JSONField(default=list, help_text="LLMCall ids, one per step.")
    cached_call_ids = models.JSONField(default=list, help_text="Those the cache answered.")
    provider_calls = models.PositiveIntegerField(default=0, help_text="Not answered by cache.")
    input_tokens = models.PositiveIntegerField(default=0)
    # Of the input tokens, those the provider read from its prompt cache (at its cached rate).
    cached_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    is_offline = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    # The rubric the member was shown (the rubric judge, in a context with a rubric): a
    # golden-context result is stale once a newer revision of that rubric is golden.
    rubric_revision = models.ForeignKey(
        RubricRevision,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The rubric revision the member judged with, if it was shown one.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judgment", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["judgment", "strategy"], name="one_result_per_judgment_and_strategy"
            )
        ]

    def __str__(self) -> str:
        return f"{self.judgment}: {self.strategy} {self.score}"


class ReplacedResult(models.Model):
    """A member's result that re-judging replaced, kept as it was, with the team's verdict of
    the time: the history of a patch's verdict.

    ``StrategyResult`` stays the one current result per member and patch, which every reader
    of a run (tables, exports, uncertainty, calibration, reports) relies on; re-judging moves
    the earlier result here before the member is judged again, so nothing it said is lost.
    """

    class Reason(models.TextChoices):
        RUBRIC_CHANGED = "rubric_changed", "a newer revision of the rubric became golden"

    judgment = models.ForeignKey(
        PatchJudgment, on_delete=models.CASCADE, related_name="replaced_results"
    )
    strategy = models.CharField(max_length=40)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    generation = models.PositiveIntegerField(help_text="The run's generation that re-judged it.")
    replaced_at = models.DateTimeField(auto_now_add=True)
    # The member's result as it was (the fields of StrategyResult).
    status = models.CharField(max_length=10, choices=StrategyResult.Status.choices)
    score = models.FloatField(null=True, blank=True, help_text="0–100.")
    verdict = models.CharField(max_length=10, blank=True)
    reasoning = models.TextField(blank=True)
    answers = models.JSONField(default=dict)
    prompt_version = models.CharField(max_length=40)
    call_ids = models.JSONField(default=list)
    cached_call_ids = models.JSONField(default=list)
    provider_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    # Of the input tokens, those the provider read from its prompt cache (at its cached rate).
    cached_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    is_offline = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    rubric_revision = models.ForeignKey(
        RubricRevision, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    judged_at = models.DateTimeField(help_text="When the replaced result was written.")
    # The team's verdict on the patch before the re-judge.
    team_status = models.CharField(max_length=10, choices=PatchJudgment.Status.choices)
    team_score = models.FloatField(null=True, blank=True)
    team_verdict = models.CharField(max_length=10, choices=Label.choices[:2], blank=True)
    team_spread = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["judgment", "id"]

    def __str__(self) -> str:
        return f"{self.judgment}: {self.strategy} {self.verdict or self.score} (replaced)"


class BugStep(models.Model):
    """A strategy's first step that depends only on the bug (s4 analyze, s5 tests), per run."""

    run = models.ForeignKey(JudgingRun, on_delete=models.CASCADE, related_name="bug_steps")
    bug = models.ForeignKey(Bug, on_delete=models.CASCADE, related_name="+")
    strategy = models.CharField(max_length=40)
    answer = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    prompt_version = models.CharField(max_length=40)
    call_id = models.BigIntegerField(null=True, blank=True)
    from_cache = models.BooleanField(default=False)
    provider_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    # Of the input tokens, those the provider read from its prompt cache (at its cached rate).
    cached_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "bug", "strategy"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "bug", "strategy"], name="one_step_per_run_bug_and_strategy"
            )
        ]

    def __str__(self) -> str:
        return f"{self.run} — {self.bug}: {self.strategy} step 1"


class RejectionTheme(models.Model):
    """Why a run rejected a patch that passes its tests: the judge's justification sorted
    into one of paper 004 §7's themes by a versioned prompt (``judging.runs.rejections``).

    One per judgment of a run whose patch has ``tests_pass`` true and whose team verdict is
    INVALID. The justification sorted is the rubric member's reasoning when the run has a
    rubric member that said INVALID, otherwise the reasoning of the lowest-scoring member
    (``strategy`` says whose). A row is *pending* from the lead's request until a worker sorts
    it; a call that failed keeps its ``error`` and no theme: nothing is guessed.
    """

    class Theme(models.TextChoices):
        VIOLATES_REQUIREMENT = "violates_requirement", "Violates a rubric requirement"
        ROOT_CAUSE = "root_cause", "Does not address the root cause"
        INCOMPLETE = "incomplete", "Incomplete implementation"
        NEW_ISSUES = "new_issues", "Introduces new issues"
        OTHER = "other", "Other"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    judgment = models.OneToOneField(
        PatchJudgment, on_delete=models.CASCADE, related_name="rejection_theme"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    theme = models.CharField(max_length=24, choices=Theme.choices, blank=True)
    rationale = models.TextField(blank=True)
    strategy = models.CharField(max_length=40, help_text="The member whose justification it is.")
    justification = models.TextField(
        blank=True, help_text="The text sorted, as the judge wrote it."
    )
    prompt_version = models.CharField(max_length=40)
    llm_call_id = models.BigIntegerField(null=True, blank=True)
    is_offline = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sorted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["judgment"]

    def __str__(self) -> str:
        return f"{self.judgment}: {self.theme or self.status}"


class WrittenJudge(models.Model):
    """A judge a lead wrote (``judging.judges``): a name a team names it by, and its versions.

    Its name is a slug that no built-in strategy has; a team names the judge's newest trusted
    version by it (``minimalism``), or one version by number (``minimalism@3``).
    """

    name = models.SlugField(max_length=24, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        for version in self.versions.all():
            version.delete_check()
        return super().delete(*args, **kwargs)  # type: ignore[arg-type]


class VersionFrozen(Exception):
    """A judge version's content is never changed (every edit is a new version), and a
    version a run names is never deleted."""


# What a version says: fixed once it is written. Its status alone may change.
JUDGE_VERSION_CONTENT = ("judge_id", "number", "title", "template", "kind", "dimensions", "overall")
FROZEN_CHANGE = "{label} is never changed: every edit is a new version (changed: {fields})"
FROZEN_DELETE = "{label} is named by a judging run and is never deleted"


class JudgeVersionQuerySet(models.QuerySet["JudgeVersion"]):
    def update(self, **kwargs: object) -> int:
        frozen = sorted(set(kwargs) & {*JUDGE_VERSION_CONTENT, "judge"})
        if frozen:
            raise VersionFrozen(FROZEN_CHANGE.format(label="a judge version", fields=frozen))
        return super().update(**kwargs)


class JudgeVersion(models.Model):
    """One version of a written judge: its title, prompt template, answer kind (with its
    dimensions and how they make the overall score), who wrote it and why, and how far it is
    trusted. Written once: an edit is a new version; a run names the version it judged with
    (``name@number`` in ``JudgingRun.strategies`` and ``StrategyResult.strategy``)."""

    class Kind(models.TextChoices):
        VERDICT = "verdict", "A verdict: VALID or INVALID with a justification (100 or 0)"
        SCORE = "score", "A score on 0–100 with reasoning"
        DIMENSIONS = "dimensions", "Named dimensions, each on its own ordinal scale"

    class Status(models.TextChoices):
        UNTESTED = "untested", "Untested"
        TESTED = "tested", "Tested"
        TRUSTED = "trusted", "Trusted"

    judge = models.ForeignKey(WrittenJudge, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    template = models.TextField(help_text="The prompt, with data blocks such as {{ bug }}.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # [{"name": "maintainability", "low": 1, "high": 5, "description": "..."}, ...]
    dimensions = models.JSONField(default=list, blank=True)
    # The dimension that is the overall score; "" for the mean of every dimension.
    overall = models.CharField(max_length=32, blank=True)
    note = models.TextField(blank=True, help_text="Why this version was written.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.UNTESTED)

    objects = JudgeVersionQuerySet.as_manager()

    class Meta:
        ordering = ["judge", "number"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "number"], name="one_judge_version_number")
        ]

    def __str__(self) -> str:
        return self.label

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:
            stored = JudgeVersion.objects.filter(pk=self.pk).values(*JUDGE_VERSION_CONTENT).first()
            if stored is not None:
                changed = [f for f in JUDGE_VERSION_CONTENT if stored[f] != getattr(self, f)]
                if changed:
                    raise VersionFrozen(FROZEN_CHANGE.format(label=self.label, fields=changed))
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        self.delete_check()
        return super().delete(*args, **kwargs)  # type: ignore[arg-type]

    def delete_check(self) -> None:
        """``VersionFrozen`` when a judging run names the version."""
        if JudgingRun.objects.filter(strategies__icontains=f'"{self.label}"').exists():
            raise VersionFrozen(FROZEN_DELETE.format(label=self.label))

    @property
    def label(self) -> str:
        """``name@number``, what a team and a run's results name it by."""
        return f"{self.judge.name}@{self.number}"


class JudgeTest(models.Model):
    """*Test this judge*: one version measured on a dataset's quality ladders (ordering
    alignment, τ-b) and on its labelled patches (accuracy, κ, AC1, MCC against the humans'
    consensus), beside the dataset's current team and the match baselines on the same patches
    (``judging.judges.testing``). Its runs judge; a task measures them once they end."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        MEASURED = "measured", "Measured"
        FAILED = "failed", "Failed"

    version = models.ForeignKey(JudgeVersion, on_delete=models.CASCADE, related_name="tests")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="judge_tests")
    # The runs that judge for the test, by role: {"ladder": id, "judge": id, "team": id,
    # "bleu": id, "chrf": id, "edit": id}.
    runs = models.JSONField(default=dict)
    team = models.JSONField(default=list, help_text="The dataset's current team, compared with.")
    patch_count = models.PositiveIntegerField(default=0, help_text="Labelled patches judged.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    error = models.TextField(blank=True)
    # What was measured (``testing.measure``): {"ladder": {...}, "labelled": {...}}.
    figures = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    measured_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Test of {self.version.label} on {self.dataset.name}"
