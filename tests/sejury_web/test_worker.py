"""A real Celery worker process, on whatever broker the settings name (SQLite or Redis)."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from sejury_web.tasks import ping


def database_url() -> str:
    """A URL for the test database, for processes started by a test."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "localhost", s["PORT"] or 5432
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{host}:{port}/{s['NAME']}"


@pytest.fixture
def worker(transactional_db: None, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "sejury_web", "worker",
         "--pool=solo", "--loglevel=INFO", f"--hostname=test-{os.getpid()}@%h"],
        cwd=settings.BASE_DIR,
        env=os.environ | {"DATABASE_URL": database_url()},
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


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
