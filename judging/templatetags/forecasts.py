"""``{{ value|dollars }}`` and ``{{ ratio|times }}``: a run's forecast and bill as the new-run
form and the run page show them."""

from django import template

from judging.runs import forecast

register = template.Library()

register.filter("dollars", forecast.dollars)


@register.filter
def times(value: float | None) -> str:
    """A bill's ratio to its forecast, "0.93×"; "—" when there is none (nothing forecast)."""
    if value is None:
        return "—"
    return f"{value:.2f}×"
