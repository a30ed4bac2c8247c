"""``GET /datasets``: the datasets, with their counts."""

from typing import Any

from django.http import HttpRequest
from ninja import Router

from api.auth import require_role
from api.endpoints.common import BROWSERS, api_url
from api.schemas import DatasetOut, Error
from rubrics import selectors as rubric_selectors

router = Router()


@router.get("/datasets", response={200: list[DatasetOut], 403: Error}, url_name="dataset_list")
def dataset_list(request: HttpRequest) -> list[dict[str, Any]]:
    """The datasets, with their counts of bugs and patches (leads and reviewers)."""
    require_role(request, "dataset list", *BROWSERS)
    return [
        {
            "name": dataset.name,
            "slug": dataset.slug,
            "bugs": dataset.bug_count,  # type: ignore[attr-defined]
            "patches": dataset.patch_count,  # type: ignore[attr-defined]
            "url": request.build_absolute_uri(dataset.get_absolute_url()),
            "report": api_url(request, "dataset_report", dataset.slug),
        }
        for dataset in rubric_selectors.dataset_list()
    ]
