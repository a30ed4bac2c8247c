"""Real Celery worker processes for tests, on whatever broker the settings name."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection


def database_url() -> str:
    """A URL for the test database, for processes started by a test."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    host, port = s["HOST"] or "localhost", s["PORT"] or 5432
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{host}:{port}/{s['NAME']}"


def start_worker(
    log_path: Path, *, pool: str = "solo", concurrency: int = 1, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A worker process on the test database; its output goes to ``log_path``."""
    log = log_path.open("ab")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "sejury_web", "worker",
             f"--pool={pool}", f"--concurrency={concurrency}", "--loglevel=INFO",
             f"--hostname=test-{os.getpid()}-{log_path.stem}@%h"],
            cwd=settings.BASE_DIR,
            env=os.environ | {"DATABASE_URL": database_url()} | (env or {}),
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    finally:
        log.close()


@contextmanager
def running_worker(log_path: Path, **kw: object) -> Iterator[subprocess.Popen[bytes]]:
    """A worker for the body of a ``with``, killed at its end: the test has seen what it came
    for, and a warm shutdown would only add seconds (the product's resume after a kill is
    tested on its own, in ``tests/sejury_web/test_resume_after_kill.py``)."""
    process = start_worker(log_path, **kw)  # type: ignore[arg-type]
    try:
        yield process
    finally:
        process.kill()
        process.wait()
