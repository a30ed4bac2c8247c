"""The streamlined rubric review (paper 004 §8): from the rubric editor, judge the bug's
candidate patches with the rubric as it stands and with its draft, side by side.

Reviewers and leads only: annotators never see a judge's verdicts.
"""

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from rubrics.models import Rubric
from sejury_web.htmx import HtmxHttpRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required

from .preview import (
    NO_DRAFT,
    PreviewError,
    rubric_preview_candidates,
    rubric_preview_get,
    rubric_preview_start,
)

PREVIEW_ROLES = (Role.REVIEWER, Role.LEAD)
STARTED = "Judging the candidates with revision {number}: the comparison follows below."


@require_http_methods(["GET", "POST"])
@role_required(*PREVIEW_ROLES)
@vary_on_headers("HX-Request")
def rubric_preview(request: HtmxHttpRequest, rubric_id: int) -> HttpResponse:
    """GET: the judge-preview panel (a page without htmx). POST: start a preview, then the
    panel (htmx) or a redirect to the page."""
    rubric = get_object_or_404(Rubric.objects.select_related("bug__dataset"), pk=rubric_id)
    url = reverse("judging:rubric_preview", kwargs={"rubric_id": rubric.pk})
    problem = ""
    if request.method == "POST":
        user: User = request.user  # type: ignore[assignment]
        try:
            rubric_preview_start(rubric=rubric, acting_user=user)
        except PreviewError as error:
            problem = str(error)
        if not request.htmx:
            if problem:
                messages.error(request, problem)
            else:
                messages.success(request, STARTED.format(number=rubric.current_number))
            return redirect(url)
    context = {
        "rubric": rubric,
        "bug": rubric.bug,
        "preview": rubric_preview_get(rubric=rubric),
        "candidates": rubric_preview_candidates(rubric=rubric),
        "no_draft": NO_DRAFT if rubric.current_number < 0 else "",
        "problem": problem,
        "preview_url": url,
        "offline_marker": OFFLINE_MARKER,
    }
    template = "judging/_rubric_preview.html" if request.htmx else "judging/_preview_page.html"
    return render(request, template, context)
