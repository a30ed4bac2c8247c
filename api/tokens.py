"""API tokens: created (shown once), revoked, and checked.

A token is ``sejury_`` and 43 URL-safe characters (32 random bytes). Only its SHA-256 digest
is stored, with its first ``PREFIX_LENGTH`` characters to tell tokens apart on the page. A
secret of 256 bits needs no slow hash: nobody can guess one from its digest.
"""

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from api.models import ApiToken
from sejury_web.audit import audit_record

TOKEN_PREFIX = "sejury_"  # noqa: S105 - not a secret
PREFIX_LENGTH = len(TOKEN_PREFIX) + 8
NAME_MAX = 100
DEFAULT_NAME = "API token"
TOKEN_CREATE = "api_token.create"  # noqa: S105 - an audit action
TOKEN_REVOKE = "api_token.revoke"  # noqa: S105 - an audit action
# last_used_at is written at most this often per token (seconds), not on every request.
LAST_USED_EVERY = 60


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class NewToken:
    """A token just made: ``token`` is the only time the secret exists outside the client."""

    record: ApiToken
    token: str


def token_create(*, actor: User | None, user: User, name: str = "") -> NewToken:
    """A new token for ``user``, named ``name``."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        record = ApiToken.objects.create(
            user=user,
            name=(name.strip() or DEFAULT_NAME)[:NAME_MAX],
            prefix=token[:PREFIX_LENGTH],
            digest=token_digest(token),
        )
        audit_record(actor=actor, action=TOKEN_CREATE, target=record, detail={"name": record.name})
    return NewToken(record=record, token=token)


def token_revoke(*, actor: User | None, token: ApiToken) -> ApiToken:
    """Revoke ``token`` for good (a revoked token is kept, for the audit trail)."""
    with transaction.atomic():
        updated = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        token.refresh_from_db()
        if updated:
            audit_record(actor=actor, action=TOKEN_REVOKE, target=token)
    return token


def token_check(token: str) -> ApiToken | None:
    """The active token ``token`` is, of an active user, or None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    record = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if record is None:
        return None
    now = timezone.now()
    if record.last_used_at is None or (now - record.last_used_at).total_seconds() > LAST_USED_EVERY:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
        record.last_used_at = now
    return record


def tokens_of(user: User) -> QuerySet[ApiToken]:
    """``user``'s tokens, active ones first, newest first."""
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at", "-id")


def token_of(*, user: User, token_id: int) -> ApiToken:
    """One of ``user``'s tokens (``ApiToken.DoesNotExist`` for another's, or none)."""
    return ApiToken.objects.get(pk=token_id, user=user)
