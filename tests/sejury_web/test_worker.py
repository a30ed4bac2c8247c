"""A real Celery worker process, on whatever broker the settings name (SQLite or Redis)."""

import subprocess
from pathlib import Path

import pytest
from django.db import connection

from sejury_web.tasks import ping


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
