"""A pipeline's session through a real HTTP server, with a real worker judging: a token from
the command, a bundle posted, a run started (retried and raced with one Idempotency-Key),
polled to the end, its verdicts paged and equal to ``export_verdicts``' records; a bad
bundle's errors; an annotator's token refused; a token over its rate."""

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.management import call_command
from pytest_django.fixtures import Settings
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from judging.runs.export import verdict_records
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.api.helpers import NDJSON, bundle_bytes, token_for
from tests.e2e.test_judging_run import wait_until_ready
from tests.helpers import PASSWORD
from tests.workers import running_worker

RUN_TIMEOUT_S = 120
HTTP_TIMEOUT_S = 60


def _command_token(username: str) -> str:
    out = io.StringIO()
    call_command(
        "api_token", "--user", username, "--name", "pipeline", stdout=out, stderr=io.StringIO()
    )
    return out.getvalue().strip().splitlines()[-1]


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str) -> requests.Response:
        url = path if path.startswith("http") else self.base + path
        return self.session.get(url, timeout=HTTP_TIMEOUT_S)

    def post(self, path: str, **kw: Any) -> requests.Response:
        return self.session.post(self.base + path, timeout=HTTP_TIMEOUT_S, **kw)


def _pages(api: Api, url: str) -> Iterator[dict[str, Any]]:
    while url:
        page = api.get(url)
        assert page.status_code == 200, page.text
        body = page.json()
        yield body
        url = body["next"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_pipeline_posts_a_bundle_runs_it_and_pages_its_verdicts(
    live_server: LiveServer, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a loaded machine the first of two simultaneous requests may take a while: the
    # second waits for its answer rather than answering 409.
    monkeypatch.setattr("api.idempotency.WAIT_SECONDS", 90.0)
    user_create(actor=None, username="pipeline", password=PASSWORD, roles=[Role.LEAD])
    api = Api(live_server.url, _command_token("pipeline"))

    # A bad bundle: JSON errors with their lines, nothing imported.
    bad = bundle_bytes(1, 1) + b'{"kind": "patch", "key": "P-9", "bug": "NOPE"}\n'
    refused = api.post(
        "/api/v1/datasets/Pipeline/bundle", data=bad, headers={"Content-Type": NDJSON}
    )
    assert refused.status_code == 422
    assert refused.headers["Content-Type"] == "application/json"
    assert [e["line"] for e in refused.json()["errors"]] == [3]
    assert api.get("/api/v1/datasets").json() == []

    posted = api.post(
        "/api/v1/datasets/Pipeline/bundle",
        data=bundle_bytes(2, 3),
        headers={"Content-Type": NDJSON},
    )
    assert posted.status_code == 201, posted.text
    assert posted.json()["counts"]["patch"]["created"] == 6

    log = tmp_path / "worker.log"
    with running_worker(log, pool="threads", concurrency=2):
        try:
            wait_until_ready(log)
            # Two requests at once and a retry after them, with one key: one run.
            run_body = {"dataset": "pipeline", "team": "s1b,s3", "context": "none"}
            key = {"Idempotency-Key": "nightly-2024-01-01"}
            answers: list[requests.Response] = []

            def start() -> None:
                answers.append(api.post("/api/v1/runs", json=run_body, headers=key))

            threads = [threading.Thread(target=start) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            answers.append(api.post("/api/v1/runs", json=run_body, headers=key))
            assert [a.status_code for a in answers] == [201, 201, 201], [a.text for a in answers]
            assert len({a.json()["id"] for a in answers}) == 1
            assert JudgingRun.objects.count() == 1
            run_id = answers[0].json()["id"]

            deadline = time.monotonic() + RUN_TIMEOUT_S
            while (state := api.get(f"/api/v1/runs/{run_id}").json())["status"] != "finished":
                assert state["status"] in ("queued", "running"), state
                assert time.monotonic() < deadline, state
                time.sleep(0.5)
            assert state["counts"]["done"] == 6
            assert state["counts"]["pending"] == 0
            assert state["offline"] is True
        finally:
            print(log.read_text(errors="replace")[-3000:])

    pages = list(_pages(api, f"/api/v1/runs/{run_id}/verdicts?limit=4"))
    assert len(pages) == 2
    paged = [record for page in pages for record in page["results"]]
    exported = json.loads(json.dumps(list(verdict_records(JudgingRun.objects.get(pk=run_id)))))
    assert paged == exported
    assert len(paged) == 6

    report = api.get("/api/v1/datasets/pipeline/report")
    assert report.status_code == 200

    # An annotator's token is refused everywhere the pages refuse annotators.
    annotator = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    blind = Api(live_server.url, token_for(annotator))
    calls = [
        blind.get("/api/v1/datasets"),
        blind.get(f"/api/v1/runs/{run_id}"),
        blind.get(f"/api/v1/runs/{run_id}/verdicts"),
        blind.get("/api/v1/datasets/pipeline/report"),
        blind.post("/api/v1/runs", json=run_body),
        blind.post(f"/api/v1/runs/{run_id}/cancel"),
        blind.post(f"/api/v1/runs/{run_id}/resume"),
        blind.post("/api/v1/datasets/pipeline/bundle", data=bundle_bytes(1, 1)),
    ]
    assert [c.status_code for c in calls] == [403] * len(calls)
    assert all(c.headers["Content-Type"] == "application/json" for c in calls)

    # Over the rate: 429 with Retry-After (a clock fixed inside the window: no boundary).
    monkeypatch.setattr("api.throttle.time.time", lambda: 3600 * 500_000 + 100)
    settings.SEJURY_API = settings.SEJURY_API | {"RATE": 2, "RATE_WINDOW": 3600}
    statuses = [api.get("/api/v1/datasets") for _ in range(4)]
    assert statuses[-1].status_code == 429
    assert int(statuses[-1].headers["Retry-After"]) > 0
