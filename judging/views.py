from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sejury_web.htmx import HtmxHttpRequest
from sejury_web.roles import Role, role_required

from . import selectors


@require_GET
@role_required(Role.ANNOTATOR)
def my_labels(request: HtmxHttpRequest) -> HttpResponse:
    """The annotator's own labels: what they gave, never judges' verdicts or others' labels."""
    page = Paginator(selectors.annotations_of(annotator=request.user), 50).get_page(  # type: ignore[arg-type]
        request.GET.get("page", 1)
    )
    return render(request, "judging/my_labels.html", {"page": page})
