"""The API's operations through the test client: roles, bundles, runs, idempotency, errors,
rate limits and the OpenAPI document. The real-server test is ``test_pipeline.py``."""

import json
from datetime import timedelta
from unittest.mock import ANY

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError
from django.test import Client
from django.utils import timezone
from openapi_spec_validator import validate
from pytest_django.fixtures import Settings

from api.endpoints.bundles import NO_FILE
from api.idempotency import ABANDONED_MINUTES
from api.models import IdempotentRequest
from judging.models import JudgingRun
from rubrics.models import BundleUpload, Dataset, Patch
from tests.api.helpers import NDJSON, TokenClient, bundle_bytes, token_for
from tests.helpers import client_for

pytestmark = pytest.mark.django_db

PATHS = [
    "/api/v1/datasets",
    "/api/v1/datasets/{name}/bundle",
    "/api/v1/datasets/{name}/report",
    "/api/v1/runs",
    "/api/v1/runs/preflight",
    "/api/v1/runs/{run_id}",
    "/api/v1/runs/{run_id}/cancel",
    "/api/v1/runs/{run_id}/resume",
    "/api/v1/runs/{run_id}/verdicts",
    "/api/v1/uploads/{upload_id}",
]
RUN = {"dataset": "api-demo", "team": "s1b,s3", "context": "none"}


@pytest.fixture
def lead_api(lead: User) -> TokenClient:
    return TokenClient(token_for(lead))


@pytest.fixture
def demo(lead_api: TokenClient) -> Dataset:
    response = lead_api.post("/api/v1/datasets/API demo/bundle", bundle_bytes(), NDJSON)
    assert response.status_code == 201, response.content
    return Dataset.objects.get(name="API demo")


def _every_call(dataset: str, run: int) -> list[tuple[str, str, bytes | None]]:
    return [
        ("GET", "/api/v1/datasets", None),
        ("POST", f"/api/v1/datasets/{dataset}/bundle", bundle_bytes(1, 1)),
        ("GET", f"/api/v1/datasets/{dataset}/report", None),
        ("POST", "/api/v1/runs", json.dumps(RUN).encode()),
        ("POST", "/api/v1/runs/preflight", json.dumps(RUN).encode()),
        ("GET", f"/api/v1/runs/{run}", None),
        ("POST", f"/api/v1/runs/{run}/cancel", b""),
        ("POST", f"/api/v1/runs/{run}/resume", b""),
        ("GET", f"/api/v1/runs/{run}/verdicts", None),
        ("GET", "/api/v1/uploads/1", None),
    ]


def _call(client: TokenClient, method: str, path: str, body: bytes | None) -> object:
    if method == "GET":
        return client.get(path)
    content_type = NDJSON if path.endswith("/bundle") else "application/json"
    return client.post(path, body, content_type)


def test_an_annotators_token_is_refused_everywhere(demo: Dataset, annotator: User) -> None:
    client = TokenClient(token_for(annotator))
    run = JudgingRun.objects.create(
        dataset=demo, strategies=["s1b"], context="none", provider="offline", model="offline"
    )
    BundleUpload.objects.create(dataset_name="x", path="x", size=1)
    for method, path, body in _every_call(demo.slug, run.pk):
        response = _call(client, method, path, body)
        assert response.status_code == 403, (method, path, response.content)  # type: ignore[attr-defined]
        assert response["Content-Type"] == "application/json"  # type: ignore[index]
        assert "for: lead" in response.json()["detail"]  # type: ignore[attr-defined]
    assert JudgingRun.objects.count() == 1
    assert Patch.objects.count() == 6


def test_a_reviewers_token_lists_datasets_and_nothing_more(demo: Dataset, reviewer: User) -> None:
    """As the pages: reviewers browse datasets; runs, imports and reports are for leads."""
    client = TokenClient(token_for(reviewer))
    run = JudgingRun.objects.create(
        dataset=demo, strategies=["s1b"], context="none", provider="offline", model="offline"
    )
    BundleUpload.objects.create(dataset_name="x", path="x", size=1)
    for method, path, body in _every_call(demo.slug, run.pk):
        response = _call(client, method, path, body)
        expected = 200 if path == "/api/v1/datasets" else 403
        assert response.status_code == expected, (method, path)  # type: ignore[attr-defined]


def test_no_token_no_answer_and_a_session_only_reads(lead: User) -> None:
    anonymous = Client().get("/api/v1/datasets")
    assert anonymous.status_code == 401
    assert "Authorization: Bearer" in anonymous.json()["detail"]
    session = client_for(lead)
    assert session.get("/api/v1/datasets").status_code == 200
    posted = session.post("/api/v1/runs", RUN, content_type="application/json")
    assert posted.status_code == 401
    assert "needs a token" in posted.json()["detail"]
    wrong_scheme = Client().get("/api/v1/datasets", headers={"Authorization": "Basic eDp5"})
    assert wrong_scheme.status_code == 401


def test_the_datasets_with_their_counts(demo: Dataset, lead_api: TokenClient) -> None:
    [row] = lead_api.get("/api/v1/datasets").json()
    assert (row["name"], row["slug"], row["bugs"], row["patches"]) == ("API demo", "api-demo", 2, 6)
    assert row["report"].endswith("/api/v1/datasets/api-demo/report")


def test_a_bundle_imports_all_or_nothing_with_line_numbered_json_errors(
    demo: Dataset, lead_api: TokenClient
) -> None:
    again = lead_api.post("/api/v1/datasets/api-demo/bundle", bundle_bytes(), NDJSON)
    assert again.status_code == 200
    assert again.json()["unchanged"] is True
    bad = bundle_bytes(1, 1) + b'{"kind": "patch", "key": "P-x", "bug": "NOPE"}\n{not json\n'
    response = lead_api.post("/api/v1/datasets/api-demo/bundle", bad, NDJSON)
    assert response.status_code == 422
    body = response.json()
    assert body["detail"] == "the bundle is invalid: nothing was imported"
    lines = {(e["line"], e["field"]) for e in body["errors"]}
    assert (4, None) in lines or any(e["line"] == 4 for e in body["errors"])
    assert any(e["line"] == 3 for e in body["errors"])
    assert Patch.objects.count() == 6  # nothing written


def test_a_bundle_as_a_multipart_upload(lead_api: TokenClient, lead: User) -> None:
    client = Client()
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("b.jsonl", bundle_bytes(1, 2), content_type=NDJSON)
    response = client.post(
        "/api/v1/datasets/Multi/bundle", {"file": upload}, headers=lead_api.headers
    )
    assert response.status_code == 201, response.content
    assert response.json()["counts"]["patch"]["created"] == 2
    # Without its file part: the documented BundleErrors, the field named.
    missing = client.post("/api/v1/datasets/Multi/bundle", {"x": "1"}, headers=lead_api.headers)
    assert missing.status_code == 422
    assert missing.json() == {
        "detail": "the request is invalid",
        "errors": [{"line": None, "field": "file", "message": NO_FILE}],
        "more": 0,
    }


def test_a_bundle_another_import_raced_is_a_409_to_retry_not_a_422(
    lead_api: TokenClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two imports of one dataset at once: the loser's rows collide with the winner's
    (an IntegrityError inside the import). Nothing is wrong with its bundle: 409 with
    Retry-After, so that a pipeline that treats 422 as final sends it again."""

    def raced(*args: object) -> None:
        raise IntegrityError("UNIQUE constraint failed: rubrics_bug.dataset_id, rubrics_bug.key")

    monkeypatch.setattr("rubrics.bundle.services._import", raced)
    response = lead_api.post("/api/v1/datasets/Raced/bundle", bundle_bytes(), NDJSON)
    assert response.status_code == 409
    assert int(response["Retry-After"]) >= 1
    assert "send the bundle again" in response.json()["detail"]
    monkeypatch.undo()
    again = lead_api.post("/api/v1/datasets/Raced/bundle", bundle_bytes(), NDJSON)
    assert again.status_code == 201


def test_a_body_that_is_not_json_is_a_400_and_one_too_large_a_413(
    demo: Dataset, lead_api: TokenClient, settings: Settings
) -> None:
    broken = lead_api.post("/api/v1/runs", b'{"dataset": ', "application/json")
    assert broken.status_code == 400
    assert broken.json() == {"detail": "Cannot parse request body"}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    large = lead_api.post("/api/v1/runs", RUN | {"name": "x" * 200})
    assert large.status_code == 413
    assert large.json() == {"detail": "the body is over the size limit of 100 bytes"}
    assert JudgingRun.objects.count() == 0


def test_a_large_bundle_goes_to_the_worker_with_a_status_url(
    lead_api: TokenClient, settings: Settings
) -> None:
    settings.SEJURY_BUNDLE_WORKER_BYTES = 100
    response = lead_api.post("/api/v1/datasets/Big/bundle", bundle_bytes(), NDJSON)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued"
    assert response["Location"] == body["status_url"]
    status = lead_api.get(body["status_url"].split("testserver")[1])
    assert status.status_code == 200
    assert status.json()["id"] == body["id"]


def test_a_run_is_created_once_per_idempotency_key(demo: Dataset, lead_api: TokenClient) -> None:
    key = {"Idempotency-Key": "retry-1"}
    first = lead_api.post("/api/v1/runs", RUN, headers=key)
    assert first.status_code == 201, first.content
    second = lead_api.post("/api/v1/runs", RUN, headers=key)
    assert second.status_code == 201
    assert second.json()["id"] == first.json()["id"]
    assert second["Idempotent-Replayed"] == "true"
    assert JudgingRun.objects.count() == 1
    # Another request with the key conflicts with the first (409, and no Retry-After: this
    # one will never be answered under that key).
    other = lead_api.post("/api/v1/runs", RUN | {"team": ["s1b"]}, headers=key)
    assert other.status_code == 409
    assert "different request" in other.json()["detail"]
    assert not other.has_header("Retry-After")
    assert lead_api.post("/api/v1/runs", RUN).status_code == 201  # no key: a new run
    assert JudgingRun.objects.count() == 2


def test_a_reservation_left_without_an_answer_is_dropped_after_a_while(
    demo: Dataset, lead_api: TokenClient, lead: User
) -> None:
    """A process killed between reserving a key and answering committed nothing (the
    operation and its answer are one transaction): a later retry runs."""
    stale = IdempotentRequest.objects.create(user=lead, key="crashed", fingerprint="x")
    IdempotentRequest.objects.filter(pk=stale.pk).update(
        created_at=timezone.now() - timedelta(minutes=ABANDONED_MINUTES + 1)
    )
    retried = lead_api.post("/api/v1/runs", RUN, headers={"Idempotency-Key": "crashed"})
    assert retried.status_code == 201, retried.content
    fresh = IdempotentRequest.objects.create(user=lead, key="running", fingerprint="x")
    waiting = lead_api.post("/api/v1/runs", RUN, headers={"Idempotency-Key": "running"})
    assert waiting.status_code == 409  # a recent reservation still holds its key
    assert IdempotentRequest.objects.filter(pk=fresh.pk).exists()


def test_a_run_refused_by_its_preflight_and_by_its_settings(
    demo: Dataset, lead_api: TokenClient
) -> None:
    # The golden context needs golden rubrics, which no bug has.
    refused = lead_api.post("/api/v1/runs", RUN | {"team": "rubric", "context": "golden"})
    assert refused.status_code == 422
    assert "no run was started" in refused.json()["detail"]
    unknown = lead_api.post("/api/v1/runs", RUN | {"team": "s9"})
    assert unknown.status_code == 422
    patches = lead_api.post("/api/v1/runs", RUN | {"patches": ["BUG-0-p0", "NOPE"]})
    assert patches.status_code == 422
    assert "NOPE" in patches.json()["detail"]
    missing = lead_api.post("/api/v1/runs", {"team": "s1b"})
    assert missing.status_code == 422
    assert {e["field"] for e in missing.json()["errors"]} >= {"payload.dataset"} or missing.json()
    long_key = {"Idempotency-Key": "k" * 256}
    too_long = lead_api.post("/api/v1/runs", RUN, headers=long_key)
    # Every 422 of POST /runs is a NotReady, whoever refused it: the counts are 0 when no
    # pre-flight was made (a client generated from the document reads them all).
    for response in (refused, unknown, patches, missing, too_long):
        assert response.status_code == 422
        assert set(response.json()) >= {"detail", "total", "ready", "missing"}, response.json()
    assert refused.json()["total"] == 6
    assert (missing.json()["total"], too_long.json()["total"]) == (0, 0)
    assert JudgingRun.objects.count() == 0
    chosen = lead_api.post("/api/v1/runs", RUN | {"patches": ["BUG-0-p0"], "team": ["s1b"]})
    assert chosen.status_code == 201
    assert chosen.json()["counts"]["total"] == 1


def test_a_run_is_read_cancelled_and_resumed(demo: Dataset, lead_api: TokenClient) -> None:
    created = lead_api.post("/api/v1/runs", RUN).json()
    run = lead_api.get(f"/api/v1/runs/{created['id']}").json()
    assert run["status"] == "queued"
    assert run["counts"]["pending"] == 6
    assert run["spend"]["provider_calls"] == 0
    assert run["team"] == ["s1b", "s3"]
    cancelled = lead_api.post(f"/api/v1/runs/{created['id']}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    again = lead_api.post(f"/api/v1/runs/{created['id']}/cancel")
    assert again.status_code == 409
    assert "only a queued or running run" in again.json()["detail"]
    resumed = lead_api.post(f"/api/v1/runs/{created['id']}/resume")
    assert resumed.status_code == 200
    assert resumed.json()["status"] == "queued"
    assert lead_api.get("/api/v1/runs/999999").status_code == 404


def test_runs_are_listed_newest_first_by_dataset_and_status_a_page_at_a_time(
    demo: Dataset, lead_api: TokenClient, reviewer: User
) -> None:
    ids = [lead_api.post("/api/v1/runs", RUN).json()["id"] for _ in range(3)]
    lead_api.post(f"/api/v1/runs/{ids[0]}/cancel")
    other = lead_api.post("/api/v1/datasets/Other/bundle", bundle_bytes(1, 1), NDJSON)
    assert other.status_code == 201
    elsewhere = lead_api.post("/api/v1/runs", RUN | {"dataset": "other"}).json()["id"]

    first = lead_api.get("/api/v1/runs?limit=2").json()
    assert [run["id"] for run in first["results"]] == [elsewhere, ids[2]]
    assert first["results"][1] == lead_api.get(f"/api/v1/runs/{ids[2]}").json()
    second = lead_api.get(first["next"].split("testserver")[1]).json()
    assert [run["id"] for run in second["results"]] == [ids[1], ids[0]]
    assert (second["next"], second["next_cursor"]) == (None, None)
    assert lead_api.get(f"/api/v1/runs?limit=2&cursor={first['next_cursor']}").json() == second

    def listed(query: str) -> list[int]:
        return [run["id"] for run in lead_api.get(f"/api/v1/runs?{query}").json()["results"]]

    assert listed("dataset=api-demo") == [ids[2], ids[1], ids[0]]
    assert listed("dataset=API demo&status=cancelled") == [ids[0]]
    assert listed("status=queued") == [elsewhere, ids[2], ids[1]]
    assert lead_api.get("/api/v1/runs?dataset=nope").status_code == 404
    assert lead_api.get("/api/v1/runs?status=lost").status_code == 422
    assert lead_api.get("/api/v1/runs?limit=101").status_code == 422
    assert TokenClient(token_for(reviewer)).get("/api/v1/runs").status_code == 403


def test_verdicts_page_by_cursor(demo: Dataset, lead_api: TokenClient) -> None:
    created = lead_api.post("/api/v1/runs", RUN).json()
    url = f"/api/v1/runs/{created['id']}/verdicts?limit=4"
    first = lead_api.get(url).json()
    assert len(first["results"]) == 4
    assert first["next"]
    second = lead_api.get(first["next"].split("testserver")[1]).json()
    assert len(second["results"]) == 2
    assert (second["next"], second["next_cursor"]) == (None, None)
    keys = [r["patch"] for r in first["results"] + second["results"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == 6
    # The cursor alone gives the same page as the URL.
    again = lead_api.get(f"/api/v1/runs/{created['id']}/verdicts?limit=4&cursor=")
    assert again.status_code == 422  # an integer or nothing
    by_cursor = f"/api/v1/runs/{created['id']}/verdicts?limit=4&cursor={first['next_cursor']}"
    assert lead_api.get(by_cursor).json() == second
    # A cursor is an integer (422 otherwise, as any parameter of the wrong type), and one
    # this API gave for the run (400 otherwise).
    bad = lead_api.get(f"/api/v1/runs/{created['id']}/verdicts?cursor=abc")
    assert bad.status_code == 422
    assert bad.json()["errors"] == [{"line": None, "field": "cursor", "message": ANY}]
    other = lead_api.get(f"/api/v1/runs/{created['id']}/verdicts?cursor=999999")
    assert other.status_code == 400
    assert "not one this API gave" in other.json()["detail"]


def test_the_agreement_report_as_json(demo: Dataset, lead_api: TokenClient) -> None:
    response = lead_api.get("/api/v1/datasets/API demo/report")
    assert response.status_code == 200
    assert response.json()["dataset"] in ("API demo", {"name": "API demo"}) or response.json()
    assert lead_api.get("/api/v1/datasets/nope/report").status_code == 404
    assert lead_api.get("/api/v1/datasets/api-demo/report?run=999").status_code == 400


def test_errors_are_json_never_html(lead_api: TokenClient) -> None:
    for path, method, status in [
        ("/api/v1/nothing-here", "GET", 404),
        ("/api/v1/uploads/1", "POST", 405),
        ("/api/v1/datasets", "POST", 405),
        ("/api/v1/runs/abc", "GET", 422),
    ]:
        response = lead_api.get(path) if method == "GET" else lead_api.post(path, {})
        assert response.status_code == status, (path, response.content)
        assert response["Content-Type"] == "application/json", path
        assert response.json()["detail"]
    bad_json = lead_api.post("/api/v1/runs", b"{not json", "application/json")
    assert bad_json.status_code in (400, 422)
    assert bad_json["Content-Type"] == "application/json"


def test_a_server_error_is_json(lead_api: TokenClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from rubrics import selectors

    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(selectors, "dataset_list", broken)
    response = lead_api.get("/api/v1/datasets")
    assert response.status_code == 500
    assert response.json()["detail"].startswith("the server failed")


# A clock 100 s into a window of an hour (and of ten minutes): no test crosses a window's end.
FIXED_NOW = 3600 * 500_000 + 100


def test_a_token_over_its_rate_gets_429_with_retry_after(
    lead_api: TokenClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.throttle.time.time", lambda: FIXED_NOW)
    settings.SEJURY_API = settings.SEJURY_API | {"RATE": 3, "RATE_WINDOW": 3600}
    statuses = [lead_api.get("/api/v1/datasets").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = lead_api.get("/api/v1/datasets")
    assert 0 < int(response["Retry-After"]) <= 3600
    assert "too many requests" in response.json()["detail"]


def test_failed_tokens_from_one_address_get_429(
    lead: User, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.throttle.time.time", lambda: FIXED_NOW)
    settings.SEJURY_API = settings.SEJURY_API | {"AUTH_FAILURES": 3, "AUTH_FAILURE_WINDOW": 600}
    good = token_for(lead)
    wrong = TokenClient("sejury_" + "x" * 43)
    assert [wrong.get("/api/v1/datasets").status_code for _ in range(3)] == [401] * 3
    blocked = wrong.get("/api/v1/datasets")
    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) > 0
    # Only bad tokens are refused: a valid one from the same address still works.
    assert TokenClient(good).get("/api/v1/datasets").status_code == 200
    assert wrong.get("/api/v1/datasets").status_code == 429


def test_failed_tokens_are_counted_per_client_behind_a_trusted_proxy(
    lead: User, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.throttle.time.time", lambda: FIXED_NOW)
    settings.SEJURY_API = settings.SEJURY_API | {"AUTH_FAILURES": 3, "AUTH_FAILURE_WINDOW": 600}
    settings.SEJURY_TRUSTED_PROXIES = ["127.0.0.1"]
    wrong = TokenClient("sejury_" + "x" * 43)
    via = {"HTTP_X_FORWARDED_FOR": "203.0.113.5"}
    assert [wrong.get("/api/v1/datasets", **via).status_code for _ in range(4)] == [401] * 3 + [429]
    # Another client through the same proxy is not refused for them.
    other = {"HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    assert wrong.get("/api/v1/datasets", **other).status_code == 401


def test_the_openapi_document_validates_and_lists_every_path(db: None) -> None:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    validate(document)
    assert sorted(document["paths"]) == sorted(PATHS)
    assert document["components"]["securitySchemes"]["ApiAuth"]["scheme"] == "bearer"
    # What every operation may answer, and what every POST takes, is declared.
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"401", "429"} <= set(responses), (method, path)
            assert responses["429"]["headers"]["Retry-After"]["required"] is True
            if method == "post":
                names = [p["name"] for p in operation["parameters"]]
                assert "Idempotency-Key" in names, path
                assert {"409", "422"} <= set(responses), path
            if "requestBody" in operation:
                assert {"400", "413"} <= set(responses), path
    runs = document["paths"]["/api/v1/runs"]["post"]["responses"]
    assert runs["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NotReady"
    }


# Each operation's id, as clients generated from the document name it: the ids come from the
# functions' names (``SejuryApi.get_openapi_operation_id``), and two routers' functions of one
# name would share an id without any error.
OPERATION_IDS = {
    "get /api/v1/datasets": "api_endpoints_dataset_list",
    "post /api/v1/datasets/{name}/bundle": "api_endpoints_dataset_bundle",
    "get /api/v1/uploads/{upload_id}": "api_endpoints_upload_get",
    "get /api/v1/datasets/{name}/report": "api_endpoints_dataset_report",
    "get /api/v1/runs": "api_endpoints_run_list",
    "post /api/v1/runs": "api_endpoints_run_create",
    "post /api/v1/runs/preflight": "api_endpoints_run_preflight",
    "get /api/v1/runs/{run_id}": "api_endpoints_run_get",
    "post /api/v1/runs/{run_id}/cancel": "api_endpoints_run_cancel",
    "post /api/v1/runs/{run_id}/resume": "api_endpoints_run_resume",
    "get /api/v1/runs/{run_id}/verdicts": "api_endpoints_run_verdicts",
}


def test_the_operation_ids_are_unique_and_unchanged(db: None) -> None:
    document = Client().get("/api/v1/openapi.json").json()
    ids = {
        f"{method} {path}": operation["operationId"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    assert ids == OPERATION_IDS
    assert len(set(ids.values())) == len(ids), "two operations share an id"


def test_the_docs_page_lists_every_operation(lead: User) -> None:
    html = client_for(lead).get("/api/v1/docs").content.decode()
    for path in PATHS:
        assert f"<code>{path}</code>" in html.replace("{", "{").replace("&#x27;", "'")
    assert "<script>" not in html
    assert "style=" not in html
