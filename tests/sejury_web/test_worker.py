"""A real Celery worker process, on whatever broker the settings name (SQLite or Redis)."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from sejury_web.tasks import ping
from tests.workers import running_worker


@pytest.fixture
def worker(transactional_db: None, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with running_worker(tmp_path / "worker.log") as process:
        yield process


@pytest.mark.worker
def test_a_real_worker_runs_a_task_against_the_test_database(
    worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    try:
        result = ping.delay().get(timeout=60)
    finally:
        print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
    assert result == {
        "pong": True,
        "database": connection.vendor,
        "name": str(connection.settings_dict["NAME"]),
    }
    assert worker.poll() is None
