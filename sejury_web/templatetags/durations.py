"""``{{ delta|duration_words }}``: a timedelta as people say it ("2 minutes", "1 hour")."""

from datetime import timedelta

from django import template

register = template.Library()


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
