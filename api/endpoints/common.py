"""What the operations of several domains share: who may call them, their absolute URLs, and
the dataset or run a path names (a 404 with the one wording of each when none is)."""

from typing import Annotated, Any

from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import Field

from judging.models import JudgingRun
from judging.runs.selectors import RunNotFound, run_get
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve
from sejury_web.ids import MAX_ID
from sejury_web.roles import Role

# A row id in a path or a query: past 64 bits (or below 1) it is a 422, before any query.
Id = Annotated[int, Field(ge=1, le=MAX_ID)]

LEADS = (Role.LEAD,)
BROWSERS = (Role.LEAD, Role.REVIEWER)


def api_url(request: HttpRequest, name: str, *args: Any) -> str:
    """The absolute URL of the operation named ``name`` (its ``url_name``)."""
    return request.build_absolute_uri(reverse(f"api-v1:{name}", args=args))


def dataset_or_404(name: str) -> Dataset:
    """The dataset called ``name`` (by name or URL name), or a 404 with ``UNKNOWN_DATASET``."""
    dataset = dataset_resolve(name)
    if dataset is None:
        raise Http404(UNKNOWN_DATASET.format(name=name))
    return dataset


def run_or_404(run_id: int) -> JudgingRun:
    """The run ``run_id``, or a 404 with ``UNKNOWN_RUN``'s wording."""
    try:
        return run_get(run_id=run_id)
    except RunNotFound as error:
        raise Http404(str(error)) from None


# A page's cursor: the id of the last row of the page before (an integer, opaque otherwise).
CURSOR: dict[str, Any] = {
    "ge": 1,
    "le": 2**63 - 1,
    "description": "Where the page starts: the `next_cursor` of the page before (or the "
    "`cursor` of its `next` URL); none for the first page",
}


def next_page(request: HttpRequest, last: int | None, limit: int) -> dict[str, Any]:
    """``next`` and ``next_cursor`` of a page whose last row is ``last`` (None at the end): the
    URL of this request with ``cursor`` and ``limit`` set, every other parameter kept."""
    if last is None:
        return {"next": None, "next_cursor": None}
    query = request.GET.copy()
    query["cursor"] = str(last)
    query["limit"] = str(limit)
    url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
    return {"next": url, "next_cursor": last}
