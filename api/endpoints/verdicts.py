"""``GET /runs/{id}/verdicts``: a run's verdict records, the fields of ``export_verdicts``,
paged by cursor."""

from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.errors import HttpError

from api.auth import require_role
from api.endpoints.common import LEADS, api_url, run_or_404
from api.schemas import Error, VerdictPage
from judging.models import PatchJudgment
from judging.runs.export import verdict_page

PAGE_SIZE = 100
PAGE_SIZE_MAX = 1000
BAD_CURSOR = "the cursor {cursor!r} is not one this API gave for run {run}"

router = Router()


@router.get(
    "/runs/{run_id}/verdicts",
    response={200: VerdictPage, 400: Error, 403: Error, 404: Error},
    url_name="run_verdicts",
)
def run_verdicts(
    request: HttpRequest,
    run_id: int,
    cursor: str = "",
    limit: int = PAGE_SIZE,
    final: bool = False,
) -> dict[str, Any]:
    """The run's verdict records, the fields of ``export_verdicts`` (with ``final``, the
    final label too), by bug and patch key, ``limit`` at a time (at most 1000); ``next`` is
    the next page's URL, null on the last page."""
    require_role(request, "judging runs", *LEADS)
    run = run_or_404(run_id)
    limit = max(1, min(limit, PAGE_SIZE_MAX))
    after = None
    if cursor:
        if not cursor.isdigit():
            raise HttpError(400, BAD_CURSOR.format(cursor=cursor, run=run_id))
        after = int(cursor)
    try:
        records, last = verdict_page(run, after=after, limit=limit, final=final)
    except PatchJudgment.DoesNotExist:
        raise HttpError(400, BAD_CURSOR.format(cursor=cursor, run=run_id)) from None
    following = None
    if last is not None:
        query = request.GET.copy()
        query["cursor"] = str(last)
        query["limit"] = str(limit)
        following = f"{api_url(request, 'run_verdicts', run.pk)}?{query.urlencode()}"
    return {"results": records, "next": following}
