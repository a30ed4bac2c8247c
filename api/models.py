"""Tokens, rate-limit counters and idempotent answers of the JSON API."""

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A user's API token. The token itself is never stored: only its SHA-256 digest, and
    its first characters (``prefix``) so that its owner can tell tokens apart."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"API token {self.prefix}… ({self.name}) of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class ApiThrottle(models.Model):
    """A fixed-window counter: ``count`` hits of ``key`` in the window starting at
    ``window`` (seconds since the epoch, a multiple of the window's length)."""

    key = models.CharField(max_length=200, unique=True)
    window = models.BigIntegerField()
    count = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.key}: {self.count} since {self.window}"


class IdempotentRequest(models.Model):
    """A POST made with an ``Idempotency-Key``: what was asked (``fingerprint``) and, once
    answered, the answer, replayed to a retry with the same key."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # None: in progress
    body = models.JSONField(null=True, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="one_answer_per_user_and_key")
        ]

    def __str__(self) -> str:
        return f"{self.key} of {self.user_id} → {self.status_code or 'in progress'}"
