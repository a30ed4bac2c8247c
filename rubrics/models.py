from django.conf import settings
from django.db import models
from django.urls import reverse


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True)
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


class Bug(models.Model):
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

    class Meta:
        ordering = ["dataset", "key"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="bug_key_unique_per_dataset")
        ]

    def __str__(self) -> str:
        return self.key

    def get_absolute_url(self) -> str:
        return reverse(
            "rubrics:bug_detail", kwargs={"slug": self.dataset.slug, "bug_key": self.key}
        )


class Patch(models.Model):
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
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset", "key"]
        verbose_name_plural = "patches"
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="patch_key_unique_per_dataset")
        ]
        indexes = [models.Index(fields=["bug", "diff_hash"], name="patch_bug_diff_hash")]

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

    def counts_text(self) -> str:
        """What the import did, e.g. ``6 bugs, 24 patches created``."""
        from .bundle import KindCounts, summary_text

        counts = {
            kind: KindCounts(**value)
            for kind, value in self.summary.items()
            if kind != "notes" and isinstance(value, dict)
        }
        return summary_text(counts)
