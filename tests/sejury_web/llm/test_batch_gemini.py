"""A round through Gemini's Batch Mode, with the real ``google-genai`` SDK against the fake
server: the inlined requests are what an ordinary call sends, the answers become calls."""

import json
from decimal import Decimal
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm.batch.base import BatchUnsupported
from sejury_web.llm.batch.jobs import batch_prepare, job_advance, job_cancel, round_submit
from sejury_web.llm.client import complete
from sejury_web.llm.models import LLMBatch, LLMBatchRequest, LLMCall
from sejury_web.llm.prices import call_cost
from tests.sejury_web.llm.fake_batch import GeminiBatchServer
from tests.sejury_web.llm.fake_servers import GeminiServer, error, ok
from tests.sejury_web.llm.helpers import GOOD_ANSWER, point_at, score_request

pytestmark = pytest.mark.django_db
OWNER = "test:gemini"
MODEL = "gemini-2.5-flash"


@pytest.fixture
def server(settings: Settings, tmp_path: Path) -> GeminiBatchServer:
    with GeminiBatchServer(default=lambda _body: ok(GOOD_ANSWER)) as fake:
        point_at(
            settings, tmp_path, PROVIDER="gemini", MODEL=MODEL, GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=fake.url,
        )  # fmt: skip
        yield fake


def _submit(*texts: str, round: int = 1) -> list[LLMBatch]:
    requests = [batch_prepare(score_request(text)) for text in texts]
    return round_submit(owner=OWNER, round=round, requests=requests)


def _stored(job: LLMBatch) -> LLMBatch:
    for _ in range(10):
        job_advance(job)
        if job.status == LLMBatch.Status.STORED:
            return job
    raise AssertionError(f"job {job.pk} is {job.status}")


def test_inlined_requests_are_what_an_ordinary_call_sends(
    server: GeminiBatchServer, settings: Settings, tmp_path: Path
) -> None:
    [job] = _submit("patch one")
    assert job.status == LLMBatch.Status.SUBMITTED
    [inlined] = server.lines_received
    assert inlined["metadata"] == {"key": f"req-{job.requests.get().pk}"}
    assert server.jobs[job.provider_batch_id.removeprefix("batches/")]["displayName"] == str(
        job.tag
    )
    with GeminiServer(default=lambda _body: ok(GOOD_ANSWER)) as ordinary:
        point_at(settings, tmp_path, GEMINI_BASE_URL=ordinary.url)
        complete(score_request("patch one"))
        [request] = ordinary.requests
    sent = dict(inlined["request"])
    assert sent.pop("model") == f"models/{MODEL}"
    assert sent == request.body


def test_answers_become_calls_at_half_the_price_and_errors_are_asked_again(
    server: GeminiBatchServer,
) -> None:
    server.script(ok(GOOD_ANSWER), error(503, "overloaded"))
    [job] = _submit("patch one", "patch two")
    _stored(job)
    done, retry = LLMBatchRequest.objects.order_by("pk")
    assert done.status == "done"
    assert retry.status == "retry"
    assert "overloaded" in retry.error
    [call] = LLMCall.objects.all()
    assert call.answer == json.loads(GOOD_ANSWER)
    assert call.settings["batch"] is True
    ordinary = call_cost(MODEL, input_tokens=10, output_tokens=5, cached_tokens=0)
    assert ordinary
    assert call.cost_usd == (ordinary / 2).quantize(Decimal("0.00000001"))
    _stored(_submit("patch two", round=2)[0])
    assert LLMCall.objects.filter(status="ok").count() == 2


def test_a_cancelled_job_asks_its_requests_again(server: GeminiBatchServer) -> None:
    server.hold()
    [job] = _submit("patch one")
    job_cancel(job)
    _stored(job)
    assert job.provider_status == "JOB_STATE_CANCELLED"
    assert LLMBatchRequest.objects.get().status == "retry"


def test_a_server_without_batch_mode_is_found_out_first(settings: Settings, tmp_path: Path) -> None:
    with GeminiBatchServer(batch_api=False) as fake:
        point_at(
            settings, tmp_path, PROVIDER="gemini", GEMINI_API_KEY="k", GEMINI_BASE_URL=fake.url
        )
        with pytest.raises(BatchUnsupported, match="no batch API"):
            _submit("patch one")
        assert fake.jobs_created() == 0
