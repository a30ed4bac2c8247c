"""A round through OpenAI's Batch API, with the real ``openai`` SDK against the fake server:
what is sent, what the results become, and what a killed worker's resume finds."""

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from judging.strategies.prompts import SCORE_SCHEMA
from sejury_web.llm.batch.base import BatchUnsupported
from sejury_web.llm.batch.jobs import (
    TOO_LARGE,
    batch_client_for,
    batch_prepare,
    job_advance,
    job_cancel,
    round_submit,
)
from sejury_web.llm.batch.results import NOT_ANSWERED, job_target, request_of
from sejury_web.llm.client import complete
from sejury_web.llm.models import LLMBatch, LLMBatchRequest, LLMCall
from sejury_web.llm.prices import call_cost
from tests.sejury_web.llm.fake_batch import OpenAIBatchServer
from tests.sejury_web.llm.fake_servers import OpenAIServer, error, ok
from tests.sejury_web.llm.helpers import GOOD_ANSWER, point_at, score_request

pytestmark = pytest.mark.django_db
OWNER = "test:1"
MODEL = "gpt-4o-mini"


@pytest.fixture
def server(settings: Settings, tmp_path: Path) -> OpenAIBatchServer:
    with OpenAIBatchServer(default=lambda _body: ok(GOOD_ANSWER)) as fake:
        point_at(
            settings, tmp_path, PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=fake.base_url,
        )  # fmt: skip
        yield fake


def _stored(job: LLMBatch, polls: int = 10) -> LLMBatch:
    for _ in range(polls):
        job_advance(job)
        if job.status == LLMBatch.Status.STORED:
            return job
    raise AssertionError(f"job {job.pk} is {job.status} after {polls} polls")


def _submit(*texts: str, round: int = 1) -> list[LLMBatch]:
    requests = [batch_prepare(score_request(text)) for text in texts]
    return round_submit(owner=OWNER, round=round, requests=requests)


def test_a_round_s_lines_are_the_requests_an_ordinary_call_sends(
    server: OpenAIBatchServer, settings: Settings, tmp_path: Path
) -> None:
    [job] = _submit("patch one", "patch two")
    assert job.status == LLMBatch.Status.SUBMITTED
    [sent] = server.batches.values()
    assert sent.metadata == {"sejury_batch": str(job.tag)}  # found again after a kill
    assert sent.endpoint == "/v1/chat/completions"
    assert [line["url"] for line in sent.lines] == ["/v1/chat/completions"] * 2
    assert not sent.errors  # the fake's validation of OpenAI's input format
    with OpenAIServer(default=lambda _body: ok(GOOD_ANSWER)) as ordinary:
        point_at(settings, tmp_path, OPENAI_BASE_URL=ordinary.base_url)
        complete(score_request("patch one"))
        [request] = ordinary.requests
    assert sent.lines[0]["body"] == request.body


def test_results_become_ordinary_calls_at_half_the_price(server: OpenAIBatchServer) -> None:
    [job] = _submit("patch one", "patch two")
    _stored(job)
    calls = list(LLMCall.objects.order_by("pk"))
    assert [c.status for c in calls] == ["ok", "ok"]
    assert all(c.settings["batch"] is True and c.answer == json.loads(GOOD_ANSWER) for c in calls)
    ordinary = call_cost(MODEL, input_tokens=10, output_tokens=5, cached_tokens=0)
    assert ordinary is not None
    assert ordinary > 0
    assert calls[0].cost_usd == (ordinary / 2).quantize(Decimal("0.00000001"))
    # A second asking is answered from the log, as complete() would answer it.
    again = batch_prepare(score_request("patch one"))
    assert again.cached is not None
    assert again.cached.pk == calls[0].pk
    assert complete(score_request("patch one")).from_cache
    assert LLMBatchRequest.objects.filter(status="done").count() == 2


def test_an_unparsed_answer_is_asked_again_with_the_correction_never_guessed(
    server: OpenAIBatchServer,
) -> None:
    server.script(ok("the score is high"))
    [job] = _submit("patch one")
    _stored(job)
    [row] = LLMBatchRequest.objects.all()
    assert row.status == LLMBatchRequest.Status.CORRECT
    assert not LLMCall.objects.exists()  # no answer yet, and none made up
    [job] = _submit("patch one", round=2)
    [second] = list(server.batches.values())[-1].lines
    roles = [m["role"] for m in second["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert second["body"]["messages"][2]["content"] == "the score is high"
    _stored(job)
    [call] = LLMCall.objects.all()
    assert call.status == "ok"
    assert call.attempts == 2
    assert call.input_tokens == 20
    assert call.messages[-1]["content"] == "patch one"  # the request, as complete() logs it


def test_a_second_unparsed_answer_fails_the_request(server: OpenAIBatchServer) -> None:
    server.script(ok("no"), ok("still no"))
    _stored(_submit("patch one")[0])
    _stored(_submit("patch one", round=2)[0])
    [call] = LLMCall.objects.all()
    assert call.status == LLMCall.Status.PARSE_FAILURE
    assert call.attempts == 2
    assert LLMBatchRequest.objects.order_by("pk").last().status == "failed"


def test_a_score_outside_the_judging_schema_is_asked_again_then_fails_never_clamped(
    server: OpenAIBatchServer,
) -> None:
    # The judging prompts' own score schema (0–100), as a batch run's S1b line carries it.
    request = dataclasses.replace(score_request("patch one"), schema=SCORE_SCHEMA)
    server.script(ok('{"score": 150, "reasoning": "x"}'), ok('{"score": -7, "reasoning": "x"}'))
    _stored(round_submit(owner=OWNER, round=1, requests=[batch_prepare(request)])[0])
    [row] = LLMBatchRequest.objects.all()
    assert row.status == LLMBatchRequest.Status.CORRECT
    assert "150 is greater than the maximum of 100" in row.attempt_log[0]["error"]
    assert not LLMCall.objects.exists()  # no answer made of it

    _stored(round_submit(owner=OWNER, round=2, requests=[batch_prepare(request)])[0])
    [call] = LLMCall.objects.all()
    assert (call.status, call.answer, call.attempts) == (LLMCall.Status.PARSE_FAILURE, None, 2)
    assert call.error.endswith("at score: -7 is less than the minimum of 0")
    assert LLMBatchRequest.objects.order_by("pk").last().status == "failed"


def test_error_lines_retry_when_asking_again_can_help_and_fail_when_not(
    server: OpenAIBatchServer,
) -> None:
    server.script(error(500, "overloaded"), error(400, "bad request"))
    [job] = _submit("patch one", "patch two")
    _stored(job)
    first, second = LLMBatchRequest.objects.order_by("pk")
    assert first.status == LLMBatchRequest.Status.RETRY
    assert "overloaded" in first.error
    assert second.status == LLMBatchRequest.Status.FAILED
    [call] = LLMCall.objects.all()
    assert call.status == "error"
    assert "400" in call.error
    assert call.settings["batch"]


def test_an_expired_job_keeps_its_answered_part_and_asks_the_rest_again(
    server: OpenAIBatchServer,
) -> None:
    server.expire_next(answered=1)
    [job] = _submit("patch one", "patch two", "patch three")
    _stored(job)
    assert job.provider_status == "expired"
    rows = list(LLMBatchRequest.objects.order_by("pk"))
    assert [r.status for r in rows] == ["done", "retry", "retry"]
    assert "batch_expired" in rows[1].error
    assert LLMCall.objects.filter(status="ok").count() == 1  # kept, and billed
    [job] = _submit("patch two", "patch three", round=2)
    _stored(job)
    assert LLMCall.objects.filter(status="ok").count() == 3
    assert LLMCall.objects.get(request_hash=rows[1].request_hash).attempts == 2


def test_a_server_without_a_batch_api_is_found_out_before_anything_is_sent(
    settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer(batch_api=False) as fake:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=fake.base_url)
        with pytest.raises(BatchUnsupported, match="no batch API"):
            _submit("patch one")
        assert not LLMBatch.objects.exists()
        assert not LLMBatchRequest.objects.exists()
        assert fake.jobs_created() == 0


def test_a_request_too_large_for_the_provider_fails_alone(
    server: OpenAIBatchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sejury_web.llm.batch import openai_batch
    from sejury_web.llm.batch.base import Limits

    monkeypatch.setattr(openai_batch.OpenAIBatchClient, "limits", Limits(requests=10, bytes=1200))
    [job] = _submit("small", "x" * 2000)
    assert job.request_count == 1
    big = LLMBatchRequest.objects.get(batch=None)
    assert big.status == "failed"
    assert big.call.status == "error"
    assert big.call.error == big.error
    assert big.error.startswith(TOO_LARGE.split("{")[0])
    assert len(server.lines_received) == 1


def test_a_round_over_the_limits_goes_as_several_jobs(
    server: OpenAIBatchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sejury_web.llm.batch import openai_batch
    from sejury_web.llm.batch.base import Limits

    monkeypatch.setattr(openai_batch.OpenAIBatchClient, "limits", Limits(requests=2, bytes=10**6))
    jobs = _submit(*[f"patch {n}" for n in range(5)])
    assert [job.request_count for job in jobs] == [2, 2, 1]
    assert server.jobs_created() == 3
    for job in jobs:
        _stored(job)
    assert LLMCall.objects.filter(status="ok").count() == 5


def test_a_job_sent_before_a_kill_is_found_by_its_tag_not_sent_again(
    server: OpenAIBatchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sejury_web.llm.batch import jobs as jobs_module

    # The worker dies after the provider created the job, before our row learnt its id.
    monkeypatch.setattr(jobs_module, "job_advance", lambda job, **kw: job)
    [job] = _submit("patch one")
    monkeypatch.undo()
    assert job.status == LLMBatch.Status.SUBMITTING
    client = batch_client_for(job_target(job, jobs_module.llm_settings()))
    rows = list(job.requests.all())
    lines = [client.line(r.custom_id, request_of(r.request)) for r in rows]
    sent_id = client.create(lines, file_id=client.upload(lines), tag=str(job.tag))
    job = LLMBatch.objects.get(pk=job.pk)
    _stored(job)
    assert job.provider_batch_id == sent_id
    assert server.jobs_created() == 1
    assert LLMCall.objects.filter(status="ok").count() == 1


def test_a_cancelled_job_stores_what_it_answered_and_asks_the_rest_again(
    server: OpenAIBatchServer,
) -> None:
    server.hold()
    [job] = _submit("patch one", "patch two")
    job_advance(job)
    job_cancel(job)
    _stored(job)
    assert job.provider_status == "cancelled"
    rows = list(LLMBatchRequest.objects.order_by("pk"))
    assert [r.status for r in rows] == ["retry", "retry"]
    assert "batch_cancelled" in rows[0].error
    assert NOT_ANSWERED.split("{")[0] not in rows[0].error


def test_every_line_and_job_is_one_openai_s_document_takes(server: OpenAIBatchServer) -> None:
    from tests.sejury_web.llm.test_openai_contract import DECLARED, _validator

    _submit("patch one", "patch two")
    [sent] = server.batches.values()
    chat = _validator("CreateChatCompletionRequest")
    for line in sent.lines:
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert list(chat.iter_errors(line["body"])) == []
        assert set(line["body"]) <= DECLARED
    created = {
        "input_file_id": sent.input_file_id,
        "endpoint": sent.endpoint,
        "completion_window": "24h",
        "metadata": sent.metadata,
    }
    assert list(_validator("CreateBatchRequest").iter_errors(created)) == []


def test_a_result_line_that_is_not_json_is_asked_again_never_guessed(
    server: OpenAIBatchServer,
) -> None:
    server.hold()
    [job] = _submit("patch one", "patch two")
    [sent] = server.batches.values()
    server._finish(sent, answered=2, ended="completed")
    assert sent.output_file_id is not None
    first, second = server.files[sent.output_file_id].splitlines(keepends=True)
    server.files[sent.output_file_id] = first[:40] + b"\n" + second  # cut off mid-line
    _stored(job)
    rows = list(LLMBatchRequest.objects.order_by("pk"))
    assert [r.status for r in rows] == ["retry", "done"]
    assert rows[0].error == NOT_ANSWERED.format(status="completed")
    assert LLMCall.objects.count() == 1


def test_a_line_asks_the_way_this_process_s_ordinary_calls_learnt(
    settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer(default=lambda _body: ok(GOOD_ANSWER), response_formats=()) as fake:
        point_at(
            settings, tmp_path, PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=fake.base_url,
        )  # fmt: skip
        complete(score_request("an ordinary call first"))  # refused json_schema, json_object
        [job] = _submit("patch one")
        [sent] = fake.batches.values()
        assert "response_format" not in sent.lines[0]["body"]  # the schema is in the prompt
        _stored(job)
    assert LLMBatchRequest.objects.get().status == "done"


def test_a_line_refused_for_a_parameter_is_asked_again_without_it(
    server: OpenAIBatchServer,
) -> None:
    refused = "Unsupported parameter: 'prompt_cache_key' is not supported with this model."
    server.script(error(400, refused))
    request = score_request("patch one", cache_group="judge.s1b:BUG-1")
    _stored(round_submit(owner=OWNER, round=1, requests=[batch_prepare(request)])[0])
    row = LLMBatchRequest.objects.get()
    assert row.status == LLMBatchRequest.Status.RETRY
    _stored(round_submit(owner=OWNER, round=2, requests=[batch_prepare(request)])[0])
    first, second = (job.lines[0]["body"] for job in server.batches.values())
    assert first["prompt_cache_key"] == "judge.s1b:BUG-1"
    assert "prompt_cache_key" not in second
    assert LLMCall.objects.get().status == "ok"
