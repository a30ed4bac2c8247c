from django.conf import settings
from django.db import models

from rubrics.models import Patch


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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["patch", "annotator"]
        constraints = [
            models.UniqueConstraint(
                fields=["patch", "annotator"], name="one_current_label_per_annotator_and_patch"
            )
        ]

    def __str__(self) -> str:
        return f"{self.patch} — {self.annotator}: {self.label}"
