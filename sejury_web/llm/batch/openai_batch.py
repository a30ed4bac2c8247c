"""OpenAI's Batch API through the ``openai`` SDK: a JSONL file of chat completion requests
uploaded (``/v1/files``, purpose ``batch``), a job over it (``/v1/batches``), its output and
error files read back when it ends.

Each line's body is built by the synchronous adapter's ``chat_body``, so a batch asks exactly
what an ordinary call would. Any server that speaks these endpoints (a proxy, our fake) is
used like OpenAI's; one that answers 404 there has no batch API, found out by ``check``.
"""

import json
import logging
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, Final

import httpx2
import openai

from ..config import Target
from ..providers.base import HTTP_ERROR, Completion, ProviderError, status_retryable
from ..providers.openai_chat import (
    OUTPUT_LIMITS,
    chat_body,
    learned_for,
    learned_set,
    openai_client,
    refused_parameter,
)
from ..types import LLMRequest
from .base import CHECK_TIMEOUT, NO_BATCH_API, BatchUnsupported, Limits, LineResult, Snapshot

log = logging.getLogger(__name__)

ENDPOINT: Final = "/v1/chat/completions"
TAG_KEY = "sejury_batch"  # the metadata key our tag goes under
ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
# Lines of a job that ended before answering them: asked again in the next round.
RETRYABLE_CODES = frozenset({"batch_expired", "batch_cancelled"})
FIND_LIMIT = 500  # the newest jobs looked through for an interrupted submission's tag

REFUSAL = "the model refused to answer: {refusal}"
NO_CHOICE = "the server returned no choices"
MALFORMED_LINE = "a result line that is not a chat completion ({error})"
LINE_ERROR = "{code}: {message}"


def _provider_error(url: str, error: openai.OpenAIError) -> ProviderError:
    if isinstance(error, openai.APIStatusError):
        body = error.body if isinstance(error.body, dict) else {}
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        return ProviderError(
            HTTP_ERROR.format(url=url, status=error.status_code, message=message or error.message),
            retryable=status_retryable(error.status_code),
            status=error.status_code,
        )
    return ProviderError(f"{url}: {error}", retryable=True)


class OpenAIBatchClient:
    limits = Limits(requests=50_000, bytes=200 * 1024 * 1024)

    def __init__(self, target: Target) -> None:
        self.target = target
        self.url = target.base_url or "api.openai.com"
        # Uploads of up to 200 MB: a longer timeout than a call's, and the SDK's own
        # retries, since these requests are not the layer's recorded attempts.
        self.client = openai_client(
            api_key=target.api_key,
            base_url=target.base_url,
            timeout=max(target.timeout, 600.0),
            max_retries=2,
        )

    def check(self) -> None:
        quick = self.client.with_options(timeout=CHECK_TIMEOUT, max_retries=0)
        for endpoint, probe in (
            ("/v1/batches", lambda: quick.batches.list(limit=1)),
            ("/v1/files", lambda: quick.files.list(purpose="batch", limit=1)),
        ):
            try:
                probe()
            except openai.NotFoundError as error:
                detail = f"404 on {endpoint}"
                raise BatchUnsupported(
                    NO_BATCH_API.format(
                        url=self.url, detail=detail, endpoints="/v1/files and /v1/batches"
                    )
                ) from error
            except openai.OpenAIError as error:
                raise _provider_error(self.url, error) from error

    def line(self, custom_id: str, request: LLMRequest) -> dict[str, Any]:
        body = chat_body(
            self.target,
            list(request.messages),
            schema=request.schema,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            reasoning=request.reasoning,
            cache_group=request.cache_group,
            # What this process's ordinary calls learnt the server refuses (a parameter, a
            # structured-output form): a batch line asks the same way.
            learned=learned_for(self.target),
        )
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def upload(self, lines: Iterable[dict[str, Any]]) -> str:
        # Through a file on disk: the input may be 200 MB, which the worker need not hold.
        with tempfile.TemporaryFile() as data:
            for line in lines:
                data.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode())
                data.write(b"\n")
            data.seek(0)
            try:
                uploaded = self.client.files.create(
                    file=("requests.jsonl", data, "application/jsonl"), purpose="batch"
                )
            except openai.OpenAIError as error:
                raise _provider_error(self.url, error) from error
        return uploaded.id

    def create(self, lines: list[dict[str, Any]], *, file_id: str, tag: str) -> str:
        try:
            batch = self.client.batches.create(
                input_file_id=file_id,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={TAG_KEY: tag},
            )
        except openai.OpenAIError as error:
            raise _provider_error(self.url, error) from error
        return batch.id

    def find(self, tag: str) -> str:
        try:
            for seen, batch in enumerate(self.client.batches.list(limit=100)):
                if (batch.metadata or {}).get(TAG_KEY) == tag:
                    return batch.id
                if seen >= FIND_LIMIT:
                    break
        except openai.OpenAIError as error:
            raise _provider_error(self.url, error) from error
        return ""

    def poll(self, batch_id: str) -> Snapshot:
        try:
            batch = self.client.batches.retrieve(batch_id)
        except openai.OpenAIError as error:
            raise _provider_error(self.url, error) from error
        counts = batch.request_counts
        errors = batch.errors.data if batch.errors and batch.errors.data else []
        return Snapshot(
            status=batch.status,
            ended=batch.status in ENDED,
            total=counts.total if counts else 0,
            completed=counts.completed if counts else 0,
            failed=counts.failed if counts else 0,
            error="; ".join(str(e.message or e.code) for e in errors),
        )

    def results(self, batch_id: str) -> Iterator[LineResult]:
        # Streamed line by line: an output file may hold 200 MB, and each line is stored as
        # it comes.
        try:
            batch = self.client.batches.retrieve(batch_id)
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                with self.client.files.with_streaming_response.content(file_id) as response:
                    for raw in response.iter_lines():
                        line = _line(raw)
                        if line is not None:
                            yield self._result(line)
        except openai.OpenAIError as error:
            raise _provider_error(self.url, error) from error

    def cancel(self, batch_id: str) -> None:
        try:
            self.client.batches.cancel(batch_id)
        except openai.OpenAIError as error:
            raise _provider_error(self.url, error) from error

    def _drop_refused(self, status: int, body: Any, message: str) -> bool:
        """Whether the error names a parameter the server refuses, which is then left out
        of this server's and model's next requests (the adapter's own rule)."""
        response = httpx2.Response(status, request=httpx2.Request("POST", self.url))
        refusal = openai.APIStatusError(message, response=response, body=body)
        param = refused_parameter(refusal)
        if not param:
            return False
        learned = learned_for(self.target)
        if param in OUTPUT_LIMITS:
            if learned.output_limit:
                return False  # both names refused
            other = OUTPUT_LIMITS[1 - OUTPUT_LIMITS.index(param)]
            learned_set(self.target, replace(learned, output_limit=other))
        elif param not in learned.dropped:
            learned_set(self.target, replace(learned, dropped=learned.dropped | {param}))
        return True

    def _result(self, line: dict[str, Any]) -> LineResult:
        custom_id = str(line.get("custom_id", ""))
        error = line.get("error")
        if error:
            code = str(error.get("code") or "error")
            message = LINE_ERROR.format(code=code, message=error.get("message") or "")
            return LineResult(custom_id, error=message, retryable=code in RETRYABLE_CODES)
        response = line.get("response") or {}
        status = int(response.get("status_code") or 0)
        body: Any = response.get("body")
        if status != 200:
            inner = body.get("error", body) if isinstance(body, dict) else {}
            detail = inner.get("message") if isinstance(inner, dict) else None
            message = HTTP_ERROR.format(url=self.url, status=status, message=detail or body)
            if self._drop_refused(status, body, str(detail or "")):
                # As an ordinary call would drop it and ask again at once: the next round's
                # line goes without it (learned_for), and so do this process's calls.
                return LineResult(custom_id, error=message, retryable=True, status=status)
            return LineResult(
                custom_id, error=message, retryable=status_retryable(status), status=status
            )
        try:
            return _completion(custom_id, body)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            message = MALFORMED_LINE.format(error=error)
            return LineResult(custom_id, error=message, retryable=True, status=status)


def _line(raw: str) -> dict[str, Any] | None:
    """A result file's line as JSON; None for a line that is not one, whose request (named
    by nothing readable) is then asked again as one the job did not answer."""
    if not raw.strip():
        return None
    try:
        line = json.loads(raw)
    except ValueError:
        log.warning("a batch result line that is not JSON was skipped: %.200s", raw)
        return None
    return line if isinstance(line, dict) else None


def _completion(custom_id: str, body: dict[str, Any]) -> LineResult:
    """A 200 line's chat completion, read as the synchronous adapter reads one."""
    choices = body.get("choices") or []
    if not choices:
        return LineResult(custom_id, error=NO_CHOICE, retryable=True, status=200)
    choice = choices[0]
    message = choice["message"]
    if message.get("refusal"):
        refusal = REFUSAL.format(refusal=message["refusal"])
        return LineResult(custom_id, error=refusal, retryable=False, status=200)
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    completion = Completion(
        text=message.get("content") or "",
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0),
        output_mode="json_schema",
        finish_reason=str(choice.get("finish_reason") or ""),
    )
    return LineResult(custom_id, completion=completion)
