"""The audit trail: who did what to an object that keeps no history of its own.

A service that changes such an object calls ``audit_record`` inside its own transaction, so
the change and its history row are written together or not at all (the habit of Zulip's
``RealmAuditLog``). Objects with a history of their own (rubrics: ``RubricEvent``; labels:
``AnnotationRevision``; consensus: ``Adjudication``) do not use it.
"""

import datetime
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from .models import AuditEvent

# How a page says what was done, by the action's last part (``run.cancel`` → cancelled).
VERBS = {
    "create": "created",
    "cancel": "cancelled",
    "resume": "resumed",
    "retry_failed": "retried the failed patches",
    "batch_leave": "went on with ordinary calls instead of batch jobs",
    "rejudge_stale": "re-judged the stale rubric verdicts",
    "rejection_themes": "sorted why passing patches were rejected",
    "close": "closed",
    "reopen": "reopened",
    "keep": "kept",
    "roles": "changed the roles",
    "consensus_rule": "changed the consensus rule",
}
OUTSIDE_TRANSACTION = "audit_record({action!r}) must run in the transaction of the change"


def audit_record(
    *, actor: User | None, action: str, target: models.Model, detail: dict[str, Any] | None = None
) -> AuditEvent:
    """Record that ``actor`` did ``action`` to ``target``, in the caller's transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(OUTSIDE_TRANSACTION.format(action=action))
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.pk else None,
        action=action,
        target_type=ContentType.objects.get_for_model(target),
        target_id=target.pk,
        target_repr=str(target)[:200],
        detail=detail or {},
    )


def audit_events(target: models.Model) -> models.QuerySet[AuditEvent]:
    """The history of ``target``, newest first."""
    return AuditEvent.objects.filter(
        target_type=ContentType.objects.get_for_model(target), target_id=target.pk
    ).select_related("actor")


@dataclass(frozen=True)
class HistoryEntry:
    when: datetime.datetime
    who: str
    what: str


def audit_history(target: models.Model, *, limit: int = 20) -> list[HistoryEntry]:
    """The last ``limit`` events of ``target`` as a page shows them, newest first."""
    return [
        HistoryEntry(
            when=event.created_at,
            who=event.actor.username if event.actor else "the system or a script",
            what=VERBS.get(event.action.rpartition(".")[2], event.action),
        )
        for event in audit_events(target)[:limit]
    ]
