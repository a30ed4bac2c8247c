"""schemathesis over the whole served OpenAPI document: every operation, every check, a
bounded number of examples each, with a lead's token and with an annotator's. The document
must say what the API does: every status, header and body it answers.

The app answers as a WSGI application in the test's thread, so that its requests see the
test's database; as with Django's test client, the connection stays open between requests.
"""

from collections.abc import Iterator

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from pytest_django.fixtures import Settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.case import Case
from schemathesis.generation.meta import GenerationMode, ParameterLocation

from tests.api.helpers import NDJSON, TokenClient, bearer, bundle_bytes, token_for

EXAMPLES = 5
CONFIG = {
    "generation": {"max-examples": EXAMPLES, "database": "none"},
    "operations": [
        {
            # A bundle's bytes are a binary string to the document, which cannot say "JSON
            # lines of bug and patch records": a schema-valid body is mostly a bundle the
            # import refuses (422, with each error's line), as the document says it may.
            "include-operation-id": "api_endpoints_dataset_bundle",
            "checks": {
                "positive_data_acceptance": {
                    "expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429"]
                }
            },
        }
    ],
}
# A bundle as the body is bytes, whatever its media type says of them.
schemathesis.serializer.alias("application/x-ndjson", "application/octet-stream")

# The fixtures are the same for every example: the users, their tokens and a dataset.
SETTINGS = hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Every phase for a lead: schema examples, fuzzing, and the coverage phase's boundary and
# negative cases (wrong types, missing parameters, unexpected methods). An annotator is
# refused every operation by role, after the same validation: the two first phases suffice.
schema = schemathesis.openapi.from_wsgi(
    "/api/v1/openapi.json", WSGIHandler(), config=SchemathesisConfig.from_dict(CONFIG)
)
refused_schema = schemathesis.openapi.from_wsgi(
    "/api/v1/openapi.json",
    WSGIHandler(),
    config=SchemathesisConfig.from_dict(CONFIG | {"phases": {"coverage": {"enabled": False}}}),
)


@pytest.fixture(scope="module")
def _connections_closed_at_the_end() -> Iterator[None]:
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def _connection_kept(_connections_closed_at_the_end: None, tokens: dict[str, str]) -> None:
    """A request's end closes the connection, which would end the test's transaction: not in
    this module (Django's test client, used by the fixtures, connects it again each time)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)


@pytest.fixture(autouse=True)
def _unlimited(settings: Settings) -> None:
    # Hundreds of requests, some with made-up tokens: no limit should answer them instead.
    settings.SEJURY_API = settings.SEJURY_API | {"RATE": 100_000, "AUTH_FAILURES": 100_000}


@pytest.fixture
def tokens(lead: User, annotator: User) -> dict[str, str]:
    """A lead's and an annotator's token, and a dataset."""
    lead_token = token_for(lead)
    answer = TokenClient(lead_token).post("/api/v1/datasets/demo/bundle", bundle_bytes(), NDJSON)
    assert answer.status_code == 201, answer.content
    return {"lead": lead_token, "annotator": token_for(annotator)}


def _auth(case: Case, token: str) -> dict[str, str]:
    """The user's token in place of the made-up one schemathesis writes in the required
    ``Authorization`` header; none when it made the headers break the document on purpose
    (negative data, e.g. no ``Authorization``): those go as it made them, for the API to
    refuse. Overwriting them would send a valid request that schemathesis believes invalid."""
    headers = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    if headers is not None and headers.mode == GenerationMode.NEGATIVE:
        return {}
    return bearer(token)


@schema.parametrize()
@SETTINGS
@pytest.mark.usefixtures("_connection_kept")
def test_the_api_does_what_its_document_says_to_a_lead(case: Case, tokens: dict[str, str]) -> None:
    case.call_and_validate(headers=_auth(case, tokens["lead"]))


@refused_schema.parametrize()
@SETTINGS
@pytest.mark.usefixtures("_connection_kept")
def test_the_api_does_what_its_document_says_to_an_annotator(
    case: Case, tokens: dict[str, str]
) -> None:
    case.call_and_validate(headers=_auth(case, tokens["annotator"]))
