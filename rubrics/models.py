import re
from collections.abc import Iterable
from typing import Any, TypeVar

from django.conf import settings
from django.db import models
from django.urls import reverse

_DIGITS = re.compile(r"\d+")
SORT_DIGITS = 12  # numbers in keys are compared as numbers up to this many digits


def natural_sort_key(key: str) -> str:
    """``key`` as it sorts for people: its numbers zero-padded, so that ``Closure-2`` comes
    before ``Closure-10`` in the database's plain text order, on SQLite and PostgreSQL alike."""
    return _DIGITS.sub(lambda number: number.group().zfill(SORT_DIGITS), key)


_M = TypeVar("_M", bound=models.Model)


class KeyedQuerySet(models.QuerySet[_M]):
    """Bulk writes of keyed rows (bugs, patches) keep their ``sort_key`` (``save()`` does too).
    A queryset ``update(key=…)`` does not: change keys through these or ``save()``."""

    def bulk_create(self, objs: Iterable[_M], *args: Any, **kwargs: Any) -> list[_M]:
        objs = list(objs)
        for obj in objs:
            obj.sort_key = natural_sort_key(obj.key)  # type: ignore[attr-defined]
        return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(
        self, objs: Iterable[_M], fields: Iterable[str], batch_size: int | None = None
    ) -> int:
        objs, fields = list(objs), list(fields)
        if "key" in fields:
            for obj in objs:
                obj.sort_key = natural_sort_key(obj.key)  # type: ignore[attr-defined]
            fields.append("sort_key")
        return super().bulk_update(objs, fields, batch_size=batch_size)


class _Keyed(models.Model):
    """A row with a ``key`` that lists sort naturally by (``sort_key``)."""

    # A 200-character key of one-digit numbers pads to at most 1,300 characters.
    sort_key = models.CharField(max_length=1300, editable=False, default="")

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.sort_key = natural_sort_key(self.key)  # type: ignore[attr-defined]
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "key" in update_fields:
            kwargs["update_fields"] = [*update_fields, "sort_key"]
        super().save(*args, **kwargs)


class ConsensusRule(models.TextChoices):
    """When a patch's human labels are its consensus without a lead (``judging.consensus``).

    Defined here, not in ``judging``, because a dataset holds the rule of its imported labels
    (and ``rubrics`` imports nothing of ``judging``); a campaign holds its own.
    """

    UNANIMOUS = "unanimous", "Unanimous (paper 004)"
    MAJORITY = "majority", "Two-thirds majority of ≥ 3 labels"


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    consensus_rule = models.CharField(
        max_length=16,
        choices=ConsensusRule.choices,
        default=ConsensusRule.UNANIMOUS,
        help_text="The consensus rule of the dataset's imported labels and dataset-wide views.",
    )
    # A dataset built from another one: today only the quality ladders of its bugs' reference
    # fixes (``rubrics.ladders``), whose bugs are copies of the source's.
    derived_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="derived"
    )
    derivation = models.CharField(max_length=16, blank=True, help_text='"ladders" or "".')
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("import_bundle", "Can import a bundle into a dataset"),
            ("export_bundle", "Can export a dataset as a bundle"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("rubrics:dataset_detail", kwargs={"slug": self.slug})


class Bug(_Keyed):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="bugs")
    key = models.CharField(max_length=200)
    title = models.CharField(max_length=500, blank=True)
    description = models.TextField()
    language = models.CharField(max_length=50, blank=True)
    bug_type = models.CharField(max_length=100, blank=True)
    reference_patch = models.TextField(help_text="The developer's fix, as a unified diff.")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KeyedQuerySet["Bug"].as_manager()

    class Meta:
        ordering = ["dataset", "sort_key"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="bug_key_unique_per_dataset")
        ]
        indexes = [
            models.Index(fields=["dataset", "sort_key"], name="bug_sort_key"),
            # The dataset's newest change (``dataset_rows_parts``), from the index alone.
            models.Index(fields=["dataset", "updated_at"], name="bug_dataset_updated"),
        ]

    def __str__(self) -> str:
        return self.key

    def get_absolute_url(self) -> str:
        return reverse(
            "rubrics:bug_detail", kwargs={"slug": self.dataset.slug, "bug_key": self.key}
        )


class Patch(_Keyed):
    """A candidate patch for a bug, produced by a repair tool or a model."""

    # Denormalized from bug.dataset so that the database enforces unique keys per dataset.
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="patches")
    bug = models.ForeignKey(Bug, on_delete=models.CASCADE, related_name="patches")
    key = models.CharField(max_length=200)
    diff = models.TextField(help_text="Stored exactly as imported.")
    diff_hash = models.CharField(
        max_length=64,
        help_text="SHA-256 of the normalized diff: equal for duplicate patches of a bug.",
    )
    source = models.CharField(max_length=200, blank=True)
    tests_pass = models.BooleanField(null=True, blank=True)
    # The test evidence behind tests_pass: SWE-bench's tests_status (FAIL_TO_PASS and
    # PASS_TO_PASS, each a success and a failure list of test names), and why tests_pass is
    # null (not evaluated) or failing for a reason of the harness's. Never shown to a judge
    # nor to an annotator.
    tests_status = models.JSONField(null=True, blank=True)
    tests_note = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KeyedQuerySet["Patch"].as_manager()

    class Meta:
        ordering = ["dataset", "sort_key"]
        verbose_name_plural = "patches"
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="patch_key_unique_per_dataset")
        ]
        indexes = [
            models.Index(fields=["bug", "diff_hash"], name="patch_bug_diff_hash"),
            models.Index(fields=["dataset", "sort_key"], name="patch_sort_key"),
            # The dataset's newest change (``dataset_rows_parts``), from the index alone.
            models.Index(fields=["dataset", "updated_at"], name="patch_dataset_updated"),
        ]

    def __str__(self) -> str:
        return self.key

    def get_absolute_url(self) -> str:
        return reverse(
            "rubrics:patch_detail", kwargs={"slug": self.dataset.slug, "patch_key": self.key}
        )


class BundleImport(models.Model):
    """The record of a successful bundle import: who brought what into a dataset."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="imports")
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    filename = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    summary = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename or 'bundle'} → {self.dataset} ({self.created_at:%Y-%m-%d %H:%M})"


class Rubric(models.Model):
    """What a valid fix of one bug must do, refined by reviewers from an LLM draft.

    Its text lives in ``RubricRevision`` rows: revision 0 is the draft, written by the model;
    each saved edit adds the next one. ``current_number`` is the optimistic lock: a save that
    was based on an older revision is refused.
    """

    class Variant(models.TextChoices):
        TEMPLATED = "templated", "templated"
        FREE_FORM = "free_form", "free form"

    class Status(models.TextChoices):
        DRAFTING = "drafting", "drafting"
        DRAFT_FAILED = "draft_failed", "draft failed"
        IN_REVIEW = "in_review", "in review"
        AWAITING_CONFIRMATION = "awaiting_confirmation", "awaiting confirmation"
        SENT_BACK = "sent_back", "sent back"
        GOLDEN = "golden", "golden"

    bug = models.ForeignKey(Bug, on_delete=models.CASCADE, related_name="rubrics")
    variant = models.CharField(max_length=16, choices=Variant.choices, default=Variant.TEMPLATED)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.DRAFTING)
    current_number = models.IntegerField(default=-1, help_text="-1 until the draft exists.")
    # The last confirmed revision; it stays golden while a later edit awaits confirmation.
    golden_revision = models.ForeignKey(
        "RubricRevision", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who asked for confirmation of the current revision.",
    )
    draft_error = models.TextField(blank=True)
    # Which queued draft task may write the draft: each request or resume takes the next, and
    # a task of an older one does nothing (rubrics.review.drafting.rubric_draft_write).
    draft_attempt = models.PositiveIntegerField(default=0)
    draft_call_id = models.BigIntegerField(null=True, blank=True)  # the failed LLMCall
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["bug__dataset", "bug__sort_key", "variant"]
        constraints = [
            models.UniqueConstraint(fields=["bug", "variant"], name="rubric_one_per_bug_variant")
        ]
        permissions = [
            ("review_rubric", "Can edit rubrics and confirm other reviewers' rubrics"),
            ("draft_rubric", "Can start rubric drafting"),
        ]

    def __str__(self) -> str:
        return f"{self.bug.key} ({self.variant})"

    def get_absolute_url(self) -> str:
        return reverse(
            "rubrics:rubric_edit",
            kwargs={
                "slug": self.bug.dataset.slug,
                "bug_key": self.bug.key,
                "variant": self.variant,
            },
        )


class Theme(models.TextChoices):
    """Why a reviewer changed a draft: the themes of paper 004, §5.1.3."""

    SUPERFLUOUS = "superfluous", "Removing superfluous constraints"
    OVERFITTING = "overfitting", "Reducing overfitting to ground truth"
    HALLUCINATION = "hallucination", "Correcting LLM errors & hallucinations"
    SCOPE = "scope", "Refining scope & expectations"
    STANDARDIZATION = "standardization", "Standardization"
    OTHER = "other", "Other"


class RubricRevision(models.Model):
    """One immutable version of a rubric's text; number 0 is the model's draft."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    # Templated: root_cause, requirements [{title, detail}], acceptable, unacceptable.
    # Free form (or a text that does not follow the template): {"text": ...}.
    structure = models.JSONField(default=dict)
    text = models.TextField(help_text="The Markdown the judge reads; edit distances use it.")
    author = models.CharField(max_length=200, help_text="A username, or llm:<provider>/<model>.")
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    justification = models.TextField(blank=True)
    themes = models.JSONField(default=list, blank=True)
    prompt_version = models.CharField(max_length=40, blank=True)
    llm_call = models.ForeignKey(
        "llm.LLMCall", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rubric", "number"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "number"], name="revision_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.rubric} r{self.number}"

    @property
    def is_draft(self) -> bool:
        return self.number == 0


class RubricEvent(models.Model):
    """The review history of a rubric: submissions, confirmations, send-backs, and the
    answers to the judge's disagreements with humans (``subjects`` names which)."""

    class Kind(models.TextChoices):
        DRAFTED = "drafted", "drafted"
        DRAFT_FAILED = "draft_failed", "draft failed"
        REVISED = "revised", "revised"
        SUBMITTED = "submitted", "submitted for confirmation"
        CONFIRMED = "confirmed", "confirmed golden"
        SENT_BACK = "sent_back", "sent back"
        IMPORTED = "imported", "imported"
        # A judge–human disagreement answered: by a new revision, or "the rubric is right".
        ANSWERED = "answered", "revised for the judge's disagreements"
        UPHELD = "upheld", "upheld: the rubric is right"

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    revision = models.ForeignKey(
        RubricRevision, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    comment = models.TextField(blank=True)
    # ANSWERED and UPHELD: the disagreements answered, as keys of
    # ``rubrics.review.disagreements.JudgeDisagreement`` ("<result id>:<human label>").
    subjects = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rubric", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.rubric}: {self.kind}"


class DraftBatch(models.Model):
    """A request to draft rubrics for many bugs; its progress is read from the rubrics."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="draft_batches")
    variant = models.CharField(max_length=16, choices=Rubric.Variant.choices)
    rubrics = models.ManyToManyField(Rubric, related_name="batches")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    provider = models.CharField(max_length=16, blank=True)
    model = models.CharField(max_length=128, blank=True)
    reasoning = models.CharField(max_length=16, blank=True)  # effort or thinking budget
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "draft batches"

    def __str__(self) -> str:
        return f"{self.dataset} {self.variant} drafts ({self.created_at:%Y-%m-%d %H:%M})"


class BundleUpload(models.Model):
    """A bundle uploaded through the import page and imported by the worker (a large one).

    The file is kept under ``settings.VAR_DIR`` until the import ends; the import's live
    progress is in a file beside it (``rubrics.bundle.upload_execution``), since the import
    writes in one transaction that no other connection sees until it ends.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting for the worker"
        RUNNING = "running", "importing"
        DONE = "done", "imported"
        FAILED = "failed", "nothing imported"

    dataset_name = models.CharField(max_length=200)
    filename = models.CharField(max_length=255, blank=True)
    path = models.CharField(max_length=500)  # relative to settings.VAR_DIR
    size = models.PositiveBigIntegerField()
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # The lead's option: give the annotator role to the existing users without any role whom
    # the file's labels name (``bundle_import(grant_annotator_role=True)``).
    grant_annotator_role = models.BooleanField(default=False)
    # FAILED: the first errors, each {"line", "field", "message"}, and how many more.
    errors = models.JSONField(default=list, blank=True)
    more_errors = models.PositiveIntegerField(default=0)
    # DONE: what the import wrote.
    bundle_import = models.OneToOneField(
        BundleImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="upload"
    )
    # Bumped each time a starting worker queues the upload again: the import of an older
    # attempt rolls back instead of committing, so a bundle is never imported twice.
    attempt = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # by the current attempt
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename or 'bundle'} → {self.dataset_name} ({self.get_status_display()})"

    def get_absolute_url(self) -> str:
        return reverse("rubrics:bundle_upload_status", args=[self.pk])
