"""The rubric report page: a dataset's edit statistics (paper 004, §5.1), and its JSON."""

from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sejury_web.htmx import HtmxHttpRequest
from sejury_web.roles import Role, role_required

from . import selectors
from .analytics import dataset_rubric_report, report_dict
from .models import Rubric

UNKNOWN_VARIANT = "unknown rubric variant {variant!r}: use one of {choices}"


# Reviewers see it too: it measures their own edits and shows no human verdicts.
@require_GET
@role_required(Role.LEAD, Role.REVIEWER)
def rubric_report(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    variant = request.GET.get("variant", Rubric.Variant.TEMPLATED)
    if variant not in Rubric.Variant.values:
        choices = ", ".join(Rubric.Variant.values)
        message = UNKNOWN_VARIANT.format(variant=variant, choices=choices)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
    report = dataset_rubric_report(dataset, variant=variant)
    if request.GET.get("format") == "json":
        response = JsonResponse(report_dict(report), json_dumps_params={"indent": 2})
        filename = f"{dataset.slug}-rubric-report-{variant}.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    return render(
        request,
        "rubrics/rubric_report.html",
        {"dataset": dataset, "report": report, "variants": Rubric.Variant.choices},
    )
