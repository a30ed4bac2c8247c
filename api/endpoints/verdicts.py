"""``GET /runs/{id}/verdicts``: a run's verdict records, the fields of ``export_verdicts``,
paged by cursor."""

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from ninja.errors import HttpError

from api.auth import require_role
from api.endpoints.common import CURSOR, LEADS, Id, next_page, run_or_404
from api.schemas import Error, VerdictPage
from judging.models import PatchJudgment
from judging.runs.export import verdict_page

PAGE_SIZE = 100
PAGE_SIZE_MAX = 1000
BAD_CURSOR = "the cursor {cursor} is not one this API gave for run {run}"

router = Router()


@router.get(
    "/runs/{run_id}/verdicts",
    response={200: VerdictPage, 400: Error, 403: Error, 404: Error},
    url_name="run_verdicts",
    exclude_unset=True,  # a record has rubric_verdict and final_label only when it says them
)
def run_verdicts(
    request: HttpRequest,
    run_id: Id,
    cursor: int | None = Query(None, **CURSOR),
    limit: int = Query(PAGE_SIZE, ge=1, le=PAGE_SIZE_MAX),
    final: bool = False,
) -> dict[str, Any]:
    """The run's verdict records, the fields of ``export_verdicts`` (with ``final``, the
    final label too), by bug and patch key, ``limit`` at a time (at most 1000). ``next`` is
    the next page's URL and ``next_cursor`` its ``cursor``, null on the last page; a cursor
    this API did not give for the run is a 400."""
    require_role(request, "judging runs", *LEADS)
    run = run_or_404(run_id)
    try:
        records, last = verdict_page(run, after=cursor, limit=limit, final=final)
    except PatchJudgment.DoesNotExist:
        raise HttpError(400, BAD_CURSOR.format(cursor=cursor, run=run_id)) from None
    return {"results": records, **next_page(request, last, limit)}
