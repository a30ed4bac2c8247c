"""Reads of annotations."""

from django.contrib.auth.models import User
from django.db.models import QuerySet

from .models import Annotation


def annotations_of(*, annotator: User) -> QuerySet[Annotation]:
    """An annotator's own labels, newest first. Never anyone else's."""
    return (
        Annotation.objects.filter(annotator=annotator)
        .select_related("patch", "patch__dataset", "patch__bug")
        .order_by("-updated_at")
    )
