"""`make run`'s last step: the web server and a worker start together and stop together."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from tests.workers import database_url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.worker
def test_serve_starts_web_and_worker_and_stops_both(transactional_db: None, tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), "--concurrency", "1"],
        cwd=settings.BASE_DIR,
        env=os.environ | {"DATABASE_URL": database_url(), "DEBUG": "1"},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and status is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/accounts/login/", timeout=2
                ) as r:
                    status = r.status
            except OSError:
                time.sleep(0.5)
        assert status == 200
        deadline = time.monotonic() + 60
        while (
            b"ready." not in (tmp_path / "serve.log").read_bytes() and time.monotonic() < deadline
        ):
            time.sleep(0.5)
        assert b"ready." in (tmp_path / "serve.log").read_bytes()  # the worker's banner
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
        print((tmp_path / "serve.log").read_text(errors="replace")[-3000:])
