"""``GET /datasets/{name}/report``: the agreement report as JSON, as the report page's
download."""

import dataclasses

from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router
from ninja.errors import HttpError

from api.auth import require_role
from api.endpoints.common import LEADS, Id, dataset_or_404
from api.schemas import AgreementReportOut, Error
from judging.reports.export import report_dict
from judging.reports.selectors import (
    ReportError,
    agreement_report,
    report_campaign,
    report_runs,
)

router = Router()


@router.get(
    "/datasets/{name}/report",
    response={200: AgreementReportOut, 400: Error, 403: Error, 404: Error},
    url_name="dataset_report",
)
def dataset_report(
    request: HttpRequest,
    name: str,
    campaign: Id | None = None,
    run: list[Id] = Query([]),  # noqa: B008 - ninja's way to declare a repeated query parameter
) -> HttpResponse:
    """The agreement report of the dataset as JSON, as the report page's JSON download: of
    one ``campaign``'s patches if given, and of the runs ``run`` (repeat it; by default the
    newest finished run of each context)."""
    require_role(request, "agreement report", *LEADS)
    dataset = dataset_or_404(name)
    try:
        chosen_campaign = report_campaign(dataset=dataset, campaign_id=campaign)
        runs = report_runs(dataset=dataset, run_ids=run or [])
    except ReportError as error:
        raise HttpError(400, str(error)) from None
    chosen = runs if run else None
    data = agreement_report(dataset, campaign=chosen_campaign, runs=chosen)
    data = dataclasses.replace(data, runs_by_default=chosen is None)
    return JsonResponse(report_dict(data), json_dumps_params={"allow_nan": False})
