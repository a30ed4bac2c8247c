import dataclasses
import datetime
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from sejury_web.htmx import HtmxHttpRequest
from sejury_web.roles import Role, role_required

from . import campaign_selectors, selectors


@dataclasses.dataclass(frozen=True)
class OwnLabelRow:
    """One of the annotator's labels, as plain values: the page can follow no relation from it
    to other annotators' labels."""

    dataset_name: str
    bug_key: str
    patch_key: str
    label: str
    note: str
    updated_at: datetime.datetime


@require_GET
@role_required(Role.ANNOTATOR)
def my_labels(request: HtmxHttpRequest) -> HttpResponse:
    """The annotator's own labels: what they gave, never judges' verdicts or others' labels;
    and their campaigns, with their own progress."""
    page = Paginator(selectors.annotations_of(annotator=request.user), 50).get_page(  # type: ignore[arg-type]
        request.GET.get("page", 1)
    )
    labels: list[Any] = [
        OwnLabelRow(
            a.patch.dataset.name, a.patch.bug.key, a.patch.key, a.label, a.note, a.updated_at
        )
        for a in page.object_list
    ]
    page.object_list = labels
    rows = campaign_selectors.annotator_campaigns(annotator=request.user)  # type: ignore[arg-type]
    return render(request, "judging/my_labels.html", {"page": page, "rows": rows})
