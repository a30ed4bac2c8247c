"""A real Celery worker process, on whatever broker the settings name (SQLite or Redis)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from sejury_web import durable
from sejury_web.llm.offline import offline_purposes
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


# What a worker's start imports: ``celery -A sejury_web worker`` loads the app, sets Django up
# and imports every app's tasks (``import_default_modules``, where Celery's Django fixup would
# run the system checks); then it connects. Heavy modules no task needs at start:
NOT_AT_START = (
    "numpy",
    "scipy",
    "ninja",
    "pydantic",
    "sejury_web.urls",
    "judging.reports.views",
    "api.views",
)
START = (
    "import json, sys, django; django.setup();"
    "from sejury_web.celery import app; app.loader.import_default_modules();"
    "from sejury_web import durable; from sejury_web.llm.offline import offline_purposes;"
    f"heavy = {NOT_AT_START!r};"
    "print(json.dumps({'imported': sorted(m for m in heavy if m in sys.modules),"
    " 'tasks': sorted(set(app.tasks) & durable.durable_task_names()),"
    " 'kinds': sorted(t for kind in durable.job_kinds() for t in kind.tasks),"
    " 'offline': sorted(offline_purposes())}))"
)


def test_a_worker_starts_without_the_pages_the_api_or_numpy() -> None:
    """A worker's start skips the system checks, whose URLconf and template libraries import
    every page, the API and the report's numpy and scipy (about 1.4 s of CPU of the 3.4 a
    start took; the suite starts about 30 workers), and imports numpy nowhere else; what a
    worker needs is there all the same: every durable task, the kinds of job it resumes and
    the offline model's rules."""
    env = {k: v for k, v in os.environ.items() if k != "CELERY_SKIP_CHECKS"}  # its own default
    done = subprocess.run(
        [sys.executable, "-c", START],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    start = json.loads(done.stdout.strip().splitlines()[-1])
    assert start["imported"] == [], done.stderr
    apps = {name for name in durable.durable_task_names() if not name.startswith("tests.")}
    assert start["tasks"] == sorted(apps)
    assert start["kinds"] == sorted(t for kind in durable.job_kinds() for t in kind.tasks)
    assert start["offline"] == sorted(offline_purposes())
