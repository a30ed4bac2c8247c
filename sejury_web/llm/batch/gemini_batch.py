"""Gemini's Batch Mode through the ``google-genai`` SDK: a job of inlined
``generateContent`` requests (``models/{model}:batchGenerateContent``), polled
(``batches/{id}``), its answers read from ``dest.inlined_responses``.

Each request's contents and config are built by the synchronous adapter (``_contents``,
``generate_config``), so a batch asks exactly what an ordinary call would. Inline input is
limited to 20 MB a job: a larger round goes as several jobs (``Limits``), not as a file.
The job's display name carries our tag, by which an interrupted submission is found again.
"""

from collections.abc import Iterable, Iterator
from typing import Any

import httpx2
from google.genai import errors, types

from ..config import Target
from ..providers.base import HTTP_ERROR, ProviderError, status_retryable
from ..providers.gemini import (
    BLOCKED,
    GEMINI_URL,
    _client,
    _contents,
    completion_of,
    finish_name,
    generate_config,
)
from ..types import LLMRequest
from .base import CHECK_TIMEOUT, NO_BATCH_API, BatchUnsupported, Limits, LineResult, Snapshot

ENDED = frozenset(
    {
        types.JobState.JOB_STATE_SUCCEEDED,
        types.JobState.JOB_STATE_FAILED,
        types.JobState.JOB_STATE_CANCELLED,
        types.JobState.JOB_STATE_EXPIRED,
    }
)
KEY = "key"  # the inlined request's metadata key our custom id goes under
FIND_LIMIT = 500
MALFORMED_LINE = "an inlined response that is not a Gemini answer ({error})"


class GeminiBatchClient:
    # 20 MB of inline requests a job (ai.google.dev/gemini-api/docs/batch-mode), with room
    # for the envelope.
    limits = Limits(requests=50_000, bytes=19_500_000)

    def __init__(self, target: Target) -> None:
        self.target = target
        self.url = target.base_url or GEMINI_URL
        self.client = _client(target.api_key, target.base_url, max(target.timeout, 600.0))

    def _error(self, error: Exception) -> ProviderError:
        if isinstance(error, errors.APIError):
            status = int(error.code or 0)
            message = HTTP_ERROR.format(url=self.url, status=status, message=error.message)
            return ProviderError(message, retryable=status_retryable(status), status=status)
        return ProviderError(f"{self.url}: {error}", retryable=True)

    def check(self) -> None:
        quick = _client(self.target.api_key, self.target.base_url, CHECK_TIMEOUT)
        try:
            next(iter(quick.batches.list(config={"page_size": 1})), None)
        except errors.APIError as error:
            if int(error.code or 0) == 404:
                raise BatchUnsupported(
                    NO_BATCH_API.format(
                        url=self.url,
                        detail="404 on batches",
                        endpoints="Gemini's batches and batchGenerateContent",
                    )
                ) from error
            raise self._error(error) from error
        except httpx2.TransportError as error:
            raise self._error(error) from error

    def line(self, custom_id: str, request: LLMRequest) -> dict[str, Any]:
        system, contents = _contents(list(request.messages))
        config = generate_config(
            self.target,
            system,
            schema=request.schema,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            reasoning=request.reasoning,
        )
        return {
            "custom_id": custom_id,
            "contents": [c.model_dump(mode="json", exclude_none=True) for c in contents],
            "config": config.model_dump(mode="json", exclude_none=True),
        }

    def upload(self, lines: Iterable[dict[str, Any]]) -> str:
        return ""  # inline

    def create(self, lines: list[dict[str, Any]], *, file_id: str, tag: str) -> str:
        requests = [
            types.InlinedRequest(
                model=self.target.model,
                contents=[types.Content.model_validate(c) for c in line["contents"]],
                config=types.GenerateContentConfig.model_validate(line["config"]),
                metadata={KEY: line["custom_id"]},
            )
            for line in lines
        ]
        try:
            job = self.client.batches.create(
                model=self.target.model,
                src=requests,
                config=types.CreateBatchJobConfig(display_name=tag),
            )
        except (errors.APIError, httpx2.TransportError) as error:
            raise self._error(error) from error
        return str(job.name)

    def find(self, tag: str) -> str:
        try:
            for seen, job in enumerate(self.client.batches.list(config={"page_size": 100})):
                if job.display_name == tag:
                    return str(job.name)
                if seen >= FIND_LIMIT:
                    break
        except (errors.APIError, httpx2.TransportError) as error:
            raise self._error(error) from error
        return ""

    def _get(self, name: str) -> types.BatchJob:
        try:
            return self.client.batches.get(name=name)
        except (errors.APIError, httpx2.TransportError) as error:
            raise self._error(error) from error

    def poll(self, batch_id: str) -> Snapshot:
        job = self._get(batch_id)
        state = job.state or types.JobState.JOB_STATE_UNSPECIFIED
        responses = (job.dest.inlined_responses or []) if job.dest else []
        failed = sum(1 for r in responses if r.error is not None)
        return Snapshot(
            status=str(state.value),
            ended=state in ENDED,
            total=len(responses),
            completed=len(responses) - failed,
            failed=failed,
            error=job.error.message or "" if job.error else "",
        )

    def results(self, batch_id: str) -> Iterator[LineResult]:
        job = self._get(batch_id)
        responses = (job.dest.inlined_responses or []) if job.dest else []
        for response in responses:
            yield self._result(response)

    def cancel(self, batch_id: str) -> None:
        try:
            self.client.batches.cancel(name=batch_id)
        except (errors.APIError, httpx2.TransportError) as error:
            raise self._error(error) from error

    def _result(self, inlined: types.InlinedResponse) -> LineResult:
        custom_id = (inlined.metadata or {}).get(KEY, "")
        if inlined.error is not None:
            status = int(inlined.error.code or 0)
            message = HTTP_ERROR.format(url=self.url, status=status, message=inlined.error.message)
            return LineResult(
                custom_id, error=message, retryable=status_retryable(status), status=status
            )
        response = inlined.response
        try:
            assert response is not None
            text = response.text
        except (AssertionError, ValueError, TypeError, AttributeError) as error:
            return LineResult(custom_id, error=MALFORMED_LINE.format(error=error), retryable=True)
        if text is None:
            reason = finish_name(response) or "none"
            return LineResult(custom_id, error=BLOCKED.format(reason=reason), retryable=False)
        completion = completion_of(response, text)
        return LineResult(custom_id, completion=completion)
