"""The agreement report's schema in the API's document says every field of the report, with
its type: a report with every section filled (humans, two runs, a calibration, rejection
themes) parses into it and back unchanged."""

import json

import pytest
from django.contrib.auth.models import User

from api.schemas import AgreementReportOut
from judging.models import Assignment, Calibration, Campaign
from tests.api.helpers import TokenClient, token_for
from tests.judging.reports.factories import build_small
from tests.judging.reports.test_rejection_themes import rejecting

pytestmark = pytest.mark.django_db


def test_the_report_parses_into_its_schema_and_back_unchanged(lead: User) -> None:
    small = build_small()
    rejecting(small)
    campaign = Campaign.objects.create(dataset=small.dataset, name="Cal", purpose="calibration")
    Assignment.objects.create(
        campaign=campaign,
        patch=small.patches["P1"],
        annotator=small.annotators["ann-a"],
        position=1,
    )
    Calibration.objects.create(campaign=campaign, run=small.golden, team=["rubric"])
    runs = f"run={small.golden.pk}&run={small.reference.pk}"
    response = TokenClient(token_for(lead)).get(f"/api/v1/datasets/small/report?{runs}")
    assert response.status_code == 200
    data = json.loads(response.content)
    assert data["rejection_themes"] is not None
    assert data["runs"][0]["calibration"] is not None
    assert all(data[section] for section in ("humans", "judges", "routing", "human_judge"))
    assert AgreementReportOut.model_validate(data).model_dump(mode="json") == data
