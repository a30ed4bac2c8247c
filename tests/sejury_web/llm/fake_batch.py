"""The providers' batch APIs on top of the fake servers, as the real SDKs call them:
OpenAI's ``/v1/files`` and ``/v1/batches`` (``OpenAIBatchServer``), Gemini's Batch Mode
(``GeminiBatchServer``, at the end of the module).

``OpenAIBatchServer`` is an ``OpenAIServer`` (its ``/v1/chat/completions`` unchanged) that
also takes a JSONL file upload (multipart, purpose ``batch``), creates, retrieves, lists and
cancels batches over it, and serves their output and error files in OpenAI's result format::

    {"id": "batch_req_…", "custom_id": "…",
     "response": {"status_code": 200, "request_id": "…", "body": {chat completion}},
     "error": null}

Each line is answered as the synchronous endpoint would answer its body (the same refusals,
the same scripted or default replies); an error reply becomes a line of the error file with
its status code and error body. A job goes ``validating`` → ``in_progress`` →
``completed`` over ``turnaround`` retrievals; tests may hold every job in progress
(``hold()`` … ``release()``), make the next job expire after answering some of its lines
(``expire_next(answered=…)``), trickle result files in line by line (``line_delay``), keep
every look at a job in progress waiting until the server stops (``stall_polls()``), or run
without a batch API at all (``batch_api=False``: 404, as an OpenAI-compatible server without
one answers).
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import itertools
import json
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, cast

from .fake_servers import (
    GeminiServer,
    JsonObject,
    OpenAIServer,
    RecordedRequest,
    _Handler,
    _HTTPServer,
    schema_reply,
)

EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, str]
    lines: list[JsonObject]
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "validating"
    retrievals: int = 0
    expire_after: int | None = None  # answer this many lines, then expire
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    errors: list[JsonObject] = field(default_factory=list)
    ended_at: dict[str, int] = field(default_factory=dict)
    total: int = 0  # its lines, counted at creation (the lines may be let go once answered)

    def document(self) -> JsonObject:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "in_progress_at": None,
            "expires_at": self.created_at + 86400,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
            **self.ended_at,
        }


class _BatchHandler(_Handler):
    """Reads the raw body (a multipart upload is not JSON) before the usual handling."""

    def _serve(self) -> None:
        fake = cast(OpenAIBatchServer, self.fake)
        path = self.path.split("?", 1)[0]
        if not path.startswith(("/v1/files", "/v1/batches")):
            super()._serve()
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, content_type, payload = fake._batch_respond(
            self.command, self.path, dict(self.headers.items()), raw
        )
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if content_type != "application/octet-stream" or not fake.line_delay:
            self.wfile.write(payload)
            return
        for line in payload.splitlines(keepends=True):  # a file that trickles in
            self.wfile.write(line)
            self.wfile.flush()
            if fake._stopping.wait(fake.line_delay):
                return


class _BatchHTTPServer(_HTTPServer):
    def __init__(self, address: tuple[str, int], fake: OpenAIBatchServer) -> None:
        self.fake = fake
        ThreadingHTTPServer.__init__(self, address, _BatchHandler)


class OpenAIBatchServer(OpenAIServer):
    """The fake OpenAI server with its Batch API; see the module's docstring."""

    _batch_ids = itertools.count(1)

    def __init__(
        self,
        *,
        turnaround: int = 1,
        batch_api: bool = True,
        line_delay: float = 0.0,
        keep_lines: bool = True,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.turnaround = turnaround  # retrievals in progress before a job completes
        self.batch_api = batch_api
        self.line_delay = line_delay  # seconds between two lines of a downloaded file
        # False (a benchmark's 50,000 lines): ``lines_received`` stays empty, and only a
        # digest of each line's body is kept, in ``body_digests``.
        self.keep_lines = keep_lines
        self.body_digests: list[str] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.lines_received: list[JsonObject] = []  # every line of every job, in order
        self._held = threading.Event()
        self._held.set()  # set: jobs move on
        self._expire_next: int | None = None
        self._stall_polls = False
        self.polls_stalled = 0  # looks at a job in progress left unanswered (``stall_polls``)

    # -- what tests control -------------------------------------------------------------------

    def hold(self) -> None:
        """Keep every job in progress until ``release()``."""
        self._held.clear()

    def release(self) -> None:
        self._held.set()

    def expire_next(self, *, answered: int) -> None:
        """The next job created answers its first ``answered`` lines, then expires."""
        with self._lock:
            self._expire_next = answered

    def stall_polls(self) -> None:
        """From now on, a look at a job that is validating or in progress is answered only
        when the server stops (a provider slow to answer), with the job as it was when asked:
        the client that asked waits. A job being cancelled is answered at once, so only a
        cancel that does not wait for a poll ends it."""
        self._stall_polls = True

    def jobs_created(self) -> int:
        with self._lock:
            return len(self.batches)

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._httpd = _BatchHTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}-{self.url}",
            daemon=True,
        )
        self._thread.start()

    # -- the endpoints ----------------------------------------------------------------------------

    def _batch_respond(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, str, bytes]:
        path = target.partition("?")[0]
        with self._lock:
            self.requests.append(
                RecordedRequest(method, path, {}, {k.lower(): v for k, v in headers.items()}, None)
            )
        if not self.batch_api:
            return self._json(404, self._error_body(404, f"Unknown request URL: {method} {path}"))
        parts = path.strip("/").split("/")  # v1, files|batches, id?, action?
        if parts[1] == "files":
            if method == "POST" and len(parts) == 2:
                return self._upload(headers, raw)
            if method == "GET" and len(parts) == 2:
                return self._json(200, {"object": "list", "data": [], "has_more": False})
            if method == "GET" and len(parts) == 4 and parts[3] == "content":
                content = self.files.get(parts[2])
                if content is not None:
                    return 200, "application/octet-stream", content
        if parts[1] == "batches":
            if method == "POST" and len(parts) == 2:
                return self._create(json.loads(raw or b"{}"))
            if method == "GET" and len(parts) == 2:
                with self._lock:
                    data = [b.document() for b in reversed(self.batches.values())]
                return self._json(200, {"object": "list", "data": data, "has_more": False})
            job = self.batches.get(parts[2]) if len(parts) > 2 else None
            if job is not None and method == "GET" and len(parts) == 3:
                late = self._stalled(job)
                return self._json(200, self._retrieve(job) if late is None else late)
            if job is not None and method == "POST" and parts[3:] == ["cancel"]:
                return self._json(200, self._cancel(job))
        return self._json(404, self._error_body(404, f"Unknown request URL: {method} {path}"))

    def _json(self, status: int, document: JsonObject) -> tuple[int, str, bytes]:
        return status, "application/json", json.dumps(document).encode()

    def _upload(self, headers: dict[str, str], raw: bytes) -> tuple[int, str, bytes]:
        content_type = next(v for k, v in headers.items() if k.lower() == "content-type")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        fields: dict[str, Any] = {}
        filename = ""
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True)
            if name == "file":
                filename = str(part.get_filename() or "")
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return self._json(400, self._error_body(400, "'purpose' must be 'batch'"))
        with self._lock:
            file_id = f"file-fake{len(self.files) + 1}"
            self.files[file_id] = fields["file"]
        return self._json(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(fields["file"]),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": "batch",
                "status": "processed",
            },
        )

    def _create(self, body: JsonObject) -> tuple[int, str, bytes]:
        content = self.files.get(str(body.get("input_file_id")))
        if content is None:
            return self._json(400, self._error_body(400, "No such File object"))
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        with self._lock:
            job = FakeBatch(
                id=f"batch_fake{next(self._batch_ids)}",
                input_file_id=str(body["input_file_id"]),
                endpoint=str(body.get("endpoint")),
                metadata=dict(body.get("metadata") or {}),
                lines=lines,
                expire_after=self._expire_next,
                total=len(lines),
            )
            self._expire_next = None
            self.batches[job.id] = job
            if self.keep_lines:
                self.lines_received.extend(lines)
            self.body_digests += [_digest(line.get("body")) for line in lines]
        job.errors = _validate(lines, job.endpoint)
        if job.errors:
            job.status = "failed"
            job.ended_at["failed_at"] = int(time.time())
        return self._json(200, job.document())

    def _stalled(self, job: FakeBatch) -> JsonObject | None:
        """A look at ``job`` left waiting until the server stops (``stall_polls``), then
        answered late, with the job as it was when asked; None if it is not held."""
        if not (self._stall_polls and job.status in ("validating", "in_progress")):
            return None
        with self._lock:
            self.polls_stalled += 1
            asked = job.document()
        self._stopping.wait()
        return asked

    def _retrieve(self, job: FakeBatch) -> JsonObject:
        with self._lock:
            job.retrievals += 1
            advance = job.status in ("validating", "in_progress", "cancelling")
        if advance:
            if job.status == "cancelling":
                self._finish(job, answered=0, ended="cancelled")
            elif job.status == "validating":
                job.status = "in_progress"
            elif self._held.is_set() and job.retrievals > self.turnaround:
                if job.expire_after is not None:
                    self._finish(job, answered=job.expire_after, ended="expired")
                else:
                    self._finish(job, answered=len(job.lines), ended="completed")
        return job.document()

    def _cancel(self, job: FakeBatch) -> JsonObject:
        if job.status in ("validating", "in_progress"):
            job.status = "cancelling"
            job.ended_at["cancelling_at"] = int(time.time())
        return job.document()

    def _finish(self, job: FakeBatch, *, answered: int, ended: str) -> None:
        """Answer the first ``answered`` lines as the chat endpoint would; the rest are
        error lines of the job's end (expired, cancelled)."""
        output, errors = [], []
        for n, line in enumerate(job.lines):
            custom_id = line["custom_id"]
            if n >= answered:
                code = "batch_expired" if ended == "expired" else "batch_cancelled"
                message = EXPIRED_MESSAGE if ended == "expired" else CANCELLED_MESSAGE
                errors.append(_line(custom_id, None, {"code": code, "message": message}))
                continue
            request = RecordedRequest("POST", self.PATH, {}, {}, line["body"])
            reply = self._refusal(request) or self._next_reply(line["body"])
            if reply.status == 200:
                document = self._success_body(reply, request)
                output.append(_line(custom_id, {"status_code": 200, "body": document}, None))
                job.completed += 1
            else:
                body = self._error_body(reply.status, reply.error_message or "error")
                errors.append(_line(custom_id, {"status_code": reply.status, "body": body}, None))
                job.failed += 1
        with self._lock:
            if output:
                job.output_file_id = f"file-out-{job.id}"
                self.files[job.output_file_id] = _jsonl(output)
            if errors:
                job.error_file_id = f"file-err-{job.id}"
                self.files[job.error_file_id] = _jsonl(errors)
            job.status = ended
            job.ended_at[f"{ended}_at"] = int(time.time())
            if not self.keep_lines:  # a benchmark's: answered, the lines are not needed
                job.lines = []
                self.files.pop(job.input_file_id, None)


_request_ids = itertools.count(1)


def _line(custom_id: str, response: JsonObject | None, error_: JsonObject | None) -> JsonObject:
    if response is not None:
        response = {**response, "request_id": f"req_fake{next(_request_ids)}"}
    return {
        "id": f"batch_req_fake{next(_request_ids)}",
        "custom_id": custom_id,
        "response": response,
        "error": error_,
    }


def _jsonl(lines: list[JsonObject]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _validate(lines: list[JsonObject], endpoint: str) -> list[JsonObject]:
    """What OpenAI's validation refuses of an input file, as its ``errors.data``."""
    problems: list[JsonObject] = []
    seen: set[str] = set()
    models = set()
    for number, line in enumerate(lines, start=1):
        custom_id = line.get("custom_id")
        body = line.get("body")
        message = ""
        if not isinstance(custom_id, str) or not custom_id:
            message = "Missing custom_id"
        elif custom_id in seen:
            message = f"Duplicate custom_id {custom_id!r}"
        elif line.get("method") != "POST" or line.get("url") != endpoint:
            message = f"The url must be {endpoint} with method POST, as the batch's endpoint"
        elif not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
            message = "Each body needs a model and messages"
        if message:
            problems.append({"code": "invalid_request", "line": number, "message": message})
        seen.add(str(custom_id))
        if isinstance(body, dict):
            models.add(body.get("model"))
    if len(models) > 1:
        message = "All requests of a batch must use the same model"
        problems.append({"code": "mismatched_model", "line": None, "message": message})
    return problems


class GeminiBatchServer(GeminiServer):
    """The fake Gemini server with its Batch Mode, as ``google-genai`` calls it (API-key
    mode): ``POST /{version}/models/{model}:batchGenerateContent`` with inlined requests,
    ``GET /{version}/batches/{id}`` (the job as an operation whose ``metadata`` holds its
    state and, once it succeeded, ``output.inlinedResponses``), ``GET /{version}/batches``
    and ``POST /{version}/batches/{id}:cancel``. Jobs move on as ``OpenAIBatchServer``'s do.
    """

    CREATE = re.compile(r"/(?P<version>v1|v1beta)/models/(?P<model>[^/:]+):batchGenerateContent")
    JOB = re.compile(r"/(?P<version>v1|v1beta)/batches/(?P<id>[^/:]+)(?P<cancel>:cancel)?")
    LIST = re.compile(r"/(?P<version>v1|v1beta)/batches")
    _batch_ids = itertools.count(1)

    def __init__(self, *, turnaround: int = 1, batch_api: bool = True, **kw: Any) -> None:
        super().__init__(**kw)
        self.turnaround = turnaround
        self.batch_api = batch_api
        self.jobs: dict[str, JsonObject] = {}
        self.lines_received: list[JsonObject] = []
        self._held = threading.Event()
        self._held.set()

    def hold(self) -> None:
        self._held.clear()

    def release(self) -> None:
        self._held.set()

    def jobs_created(self) -> int:
        with self._lock:
            return len(self.jobs)

    def _answer(self, request: RecordedRequest) -> tuple[int | None, dict[str, str], bytes]:
        path = request.path
        create = self.CREATE.fullmatch(path)
        job = self.JOB.fullmatch(path)
        listing = self.LIST.fullmatch(path)
        if not (create or job or listing):
            return super()._answer(request)
        if not self.batch_api:
            return self._reply(404, self._error_body(404, f"{path} was not found"))
        if create and request.method == "POST":
            return self._reply(200, self._create(create["model"], request.body or {}))
        if listing and request.method == "GET":
            with self._lock:
                operations = [self._document(j) for j in reversed(self.jobs.values())]
            return self._reply(200, {"operations": operations})
        found = self.jobs.get(job["id"]) if job else None
        if job and found is not None and job["cancel"] and request.method == "POST":
            if found["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                self._finish(found, state="BATCH_STATE_CANCELLED")
            return self._reply(200, {})
        if job and found is not None and request.method == "GET":
            return self._reply(200, self._retrieve(found))
        return self._reply(404, self._error_body(404, f"{path} was not found"))

    def _reply(self, status: int, document: JsonObject) -> tuple[int, dict[str, str], bytes]:
        return status, {}, json.dumps(document).encode()

    def _create(self, model: str, body: JsonObject) -> JsonObject:
        batch = body.get("batch") or {}
        requests = batch.get("inputConfig", {}).get("requests", {}).get("requests", [])
        with self._lock:
            number = next(self._batch_ids)
            job: JsonObject = {
                "name": f"batches/fake{number}",
                "model": f"models/{model}",
                "displayName": batch.get("displayName", ""),
                "state": "BATCH_STATE_PENDING",
                "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "requests": requests,
                "retrievals": 0,
                "output": None,
            }
            self.jobs[f"fake{number}"] = job
            self.lines_received.extend(requests)
        return self._document(job)

    def _retrieve(self, job: JsonObject) -> JsonObject:
        with self._lock:
            job["retrievals"] += 1
        if job["state"] == "BATCH_STATE_PENDING":
            job["state"] = "BATCH_STATE_RUNNING"
        elif (
            job["state"] == "BATCH_STATE_RUNNING"
            and self._held.is_set()
            and job["retrievals"] > self.turnaround
        ):
            self._finish(job, state="BATCH_STATE_SUCCEEDED")
        return self._document(job)

    def _finish(self, job: JsonObject, *, state: str) -> None:
        responses = []
        if state == "BATCH_STATE_SUCCEEDED":
            model = job["model"].removeprefix("models/")
            for inlined in job["requests"]:
                body = inlined.get("request", {})
                request = RecordedRequest(
                    "POST",
                    f"/v1beta/models/{model}:generateContent",
                    {},
                    {"x-goog-api-key": "batch"},
                    body,
                )
                reply = self._refusal(request) or self._next_reply(body)
                if reply.status == 200:
                    answer: JsonObject = {"response": self._success_body(reply, request)}
                else:
                    message = reply.error_message or "error"
                    answer = {"error": {"code": reply.status, "message": message}}
                responses.append({**answer, "metadata": inlined.get("metadata", {})})
        job["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        job["state"] = state

    def _document(self, job: JsonObject) -> JsonObject:
        metadata: JsonObject = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "name": job["name"],
            "model": job["model"],
            "displayName": job["displayName"],
            "state": job["state"],
            "createTime": job["createTime"],
        }
        if job["output"] is not None:
            metadata["output"] = job["output"]
        done = job["state"] not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")
        return {"name": job["name"], "metadata": metadata, "done": done}


def _digest(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def batch_counts_line(server: OpenAIBatchServer) -> str:
    """``LINES <sent> DISTINCT <distinct bodies> JOBS <jobs>``: what the CLI prints."""
    with server._lock:
        bodies = server.body_digests
        return f"LINES {len(bodies)} DISTINCT {len(set(bodies))} JOBS {len(server.batches)}"


def main(argv: list[str] | None = None) -> int:
    """Serve the OpenAI batch fake until SIGTERM/SIGINT, for benchmarks in another process:
    prints ``URL …``, then ``batch_counts_line`` on SIGUSR1 and at the end."""
    parser = argparse.ArgumentParser(prog="python -m tests.sejury_web.llm.fake_batch")
    parser.add_argument("--turnaround", type=int, default=1, help="polls before a job ends")
    parser.add_argument("--prefix-cache", action="store_true", help="count tokens as OpenAI")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = OpenAIBatchServer(
        turnaround=args.turnaround,
        default=schema_reply,
        prefix_cache=args.prefix_cache,
        keep_lines=False,
    )
    signal.signal(signal.SIGUSR1, lambda *_: print(batch_counts_line(server), flush=True))
    with server:
        print(f"URL {server.url}", flush=True)
        stop.wait()
    print(batch_counts_line(server), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
