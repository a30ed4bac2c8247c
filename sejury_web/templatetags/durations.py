"""``{{ delta|duration_words }}``: a timedelta as people say it ("2 minutes", "1 hour");
``{{ when|ago }}``: how long ago a moment was ("12 s ago"), and ``{{ when|stalled }}``: whether
a job's last progress is so long ago that the page should say nothing is moving."""

from datetime import datetime, timedelta

from django import template
from django.utils import timezone

register = template.Library()

# A job whose last progress is older than this is said to have stopped moving: far above the
# seconds between two steps of any job (a patch judged, a draft written, 0.5 s of an import),
# below the minutes a user waits before wondering.
STALLED_AFTER = timedelta(minutes=2)


@register.filter
def duration_words(delta: timedelta) -> str:
    seconds = round(delta.total_seconds())
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    minutes, rest = divmod(seconds, 60)
    if minutes:
        return f"{minutes} min {rest} s"
    return f"{seconds} second{'' if seconds == 1 else 's'}"


@register.filter
def ago(when: datetime | None) -> str:
    """``when`` as people say how long ago it was: "just now", "12 s ago", "3 min ago",
    "2 h ago", "4 days ago"."""
    if when is None:
        return ""
    seconds = max(0, int((timezone.now() - when).total_seconds()))
    if seconds < 2:
        return "just now"
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''} ago"
    return f"{seconds} s ago"


@register.filter
def stalled(when: datetime | None) -> bool:
    """Whether ``when``, a job's last progress, is over ``STALLED_AFTER`` ago."""
    return when is not None and timezone.now() - when > STALLED_AFTER
