"""What every provider's batch client shares: the limits, a job's state, a line's result.

A client speaks one provider's batch API through its SDK and knows nothing of the database:
``sejury_web.llm.batch.jobs`` writes the jobs and their requests, and calls a client to
submit, find again, poll, read and cancel them.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..providers.base import Completion
from ..types import LLMRequest

NO_BATCH_API = (
    "{url} has no batch API ({detail}): judge this run with ordinary calls instead, or point "
    "the provider at a server that speaks {endpoints}"
)


# How long ``check`` waits for the server: it runs while a lead waits for the new-run form.
CHECK_TIMEOUT = 15.0


class BatchUnsupported(Exception):
    """The server answers 404 where the batch API should be: found out before submitting."""


@dataclass(frozen=True)
class Limits:
    """What one job may carry: requests, and bytes of its input."""

    requests: int
    bytes: int


@dataclass(frozen=True)
class Snapshot:
    """A job as the provider sees it now."""

    status: str  # in the provider's words: "in_progress", "JOB_STATE_RUNNING"
    ended: bool  # completed, expired, cancelled or failed: nothing more will come
    total: int = 0
    completed: int = 0
    failed: int = 0
    error: str = ""  # why the provider failed the whole job, if it did


@dataclass(frozen=True)
class LineResult:
    """One request's result: a completion, or an error (``retryable`` if asking again could
    help: rate limits, server errors, an expired or cancelled job)."""

    custom_id: str
    completion: Completion | None = None
    error: str = ""
    retryable: bool = False
    status: int | None = None


class BatchClient(Protocol):
    limits: Limits

    def check(self) -> None:
        """Raise ``BatchUnsupported`` if the server has no batch API."""

    def line(self, custom_id: str, request: LLMRequest) -> dict[str, Any]:
        """The request as the job's input carries it (a JSON object)."""

    def upload(self, lines: Iterable[dict[str, Any]]) -> str:
        """Upload the job's input if it goes as a file (read as it is written: a file may
        hold 200 MB); its id, or "" if it goes inline."""

    def create(self, lines: list[dict[str, Any]], *, file_id: str, tag: str) -> str:
        """Start the job (its input uploaded as ``file_id``, else ``lines`` inline) under
        ``tag``; return the provider's id of it."""

    def find(self, tag: str) -> str:
        """The id of the job submitted under ``tag``, or "" if the provider has none."""

    def poll(self, batch_id: str) -> Snapshot: ...

    def results(self, batch_id: str) -> Iterator[LineResult]:
        """Every result the ended job has, answers and error lines alike."""

    def cancel(self, batch_id: str) -> None: ...
