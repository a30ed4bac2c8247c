from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone


class AuditEvent(models.Model):
    """One action on an object that keeps no history of its own: a run created, cancelled,
    resumed; a campaign closed; a calibration kept; a user created or given roles.

    Written by ``sejury_web.audit.audit_record`` in the same transaction as the change.
    ``actor`` is empty for what the system did by itself (a worker resuming a run) or what a
    script did without naming a user.
    """

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    action = models.CharField(max_length=64, help_text="e.g. run.cancel, campaign.close")
    target_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    target_id = models.PositiveBigIntegerField()
    target = GenericForeignKey("target_type", "target_id")
    target_repr = models.CharField(max_length=200)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["target_type", "target_id", "-created_at"])]

    def __str__(self) -> str:
        who = self.actor or "system"
        return f"{self.created_at:%Y-%m-%d %H:%M} {who}: {self.action} {self.target_repr}"
