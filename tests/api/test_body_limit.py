"""An API request over the largest body any operation takes is refused from its
Content-Length, before authentication and before anything reads the body (issue 27 item 8);
on the development server, without the 200 MB the server used to read into memory after it,
and on gunicorn, the server to deploy with."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.test import Client
from pytest_django.fixtures import Settings

from api.body_limit import TOO_LARGE_BODY
from tests.api.helpers import NDJSON

BUNDLE = "/api/v1/datasets/demo/bundle"
MB = 1024 * 1024


def over_limit_message() -> str:
    return TOO_LARGE_BODY.format(limit=settings.SEJURY_BUNDLE_MAX_BYTES)


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", [NDJSON, "multipart/form-data; boundary=x"])
def test_a_declared_body_over_the_limit_is_refused_before_authentication(
    content_type: str, settings: Settings
) -> None:
    settings.SEJURY_BUNDLE_MAX_BYTES = 1000
    declared = 1000 + 64 * 1024 + 1  # over the multipart allowance too
    response = Client().post(
        BUNDLE, data=b"x", content_type=content_type, CONTENT_LENGTH=str(declared)
    )
    assert response.status_code == 413
    assert response.streaming  # no Content-Length: the server closes the connection after it
    assert json.loads(b"".join(response.streaming_content)) == {"detail": over_limit_message()}


@pytest.mark.django_db
def test_a_body_within_the_limit_goes_on_to_the_operation(settings: Settings) -> None:
    settings.SEJURY_BUNDLE_MAX_BYTES = 1000
    response = Client().post(BUNDLE, data=b"x" * 1000, content_type=NDJSON)
    assert response.status_code == 401  # no token: the operation's own answer


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _peak_kb(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


SERVERS = {
    # The development server (make run), and the one docs/operations/deploy.md deploys with.
    "runserver": ["manage.py", "runserver", "127.0.0.1:{port}", "--noreload", "--skip-checks"],
    "gunicorn": ["-m", "gunicorn", "sejury_web.wsgi", "--workers", "1", "-b", "127.0.0.1:{port}"],
}


def _serving_pid(server: subprocess.Popen[bytes], name: str) -> int:
    """The process that runs the application: gunicorn's one worker, else the server."""
    if name != "gunicorn":
        return server.pid
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    assert children, "gunicorn has no worker"
    return int(children[0])


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, int]]:
    """A server in its own process: (its URL, the pid of the process running the app)."""
    port = _free_port()
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
        "DEBUG": "1",
        "SEJURY_VAR_DIR": str(tmp_path_factory.mktemp(request.param)),
    }
    arguments = [part.format(port=port) for part in SERVERS[request.param]]
    process = subprocess.Popen(
        [sys.executable, *arguments],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, f"{request.param} exited"
                assert time.monotonic() < deadline, f"{request.param} did not start"
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        requests.get(f"{url}/api/v1/openapi.json", timeout=30)  # the URLs and the API loaded
        yield url, _serving_pid(process, request.param)
    finally:
        process.terminate()
        process.wait(timeout=30)


def post_unread(url: str, path: str, size: int) -> tuple[int, dict[str, str], bytes]:
    """POST ``size`` bytes to ``path`` as a client that sends until the server stops it, then
    reads the answer: (status, headers, body)."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.putrequest("POST", path)
    connection.putheader("Content-Type", NDJSON)
    connection.putheader("Content-Length", str(size))
    connection.endheaders()
    chunk = b"x" * MB
    try:
        for _ in range(size // MB):
            connection.send(chunk)
    except OSError:  # the server answered and closed the connection: stop sending
        pass
    response = connection.getresponse()
    answer = response.status, dict(response.getheaders()), response.read()
    connection.close()
    return answer


def test_a_server_refuses_200_mb_without_reading_it(server: tuple[str, int]) -> None:
    url, pid = server
    before = _peak_kb(pid)
    status, headers, body = post_unread(url, BUNDLE, 200 * MB)
    assert status == 413
    assert headers["Connection"] == "close"
    assert json.loads(body) == {"detail": over_limit_message()}
    # Before, runserver read what was left of the body into memory in one piece: +200 MB
    # (and answered 401, authentication coming first).
    grown_mb = (_peak_kb(pid) - before) / 1024
    assert grown_mb < 20, f"the server's peak memory grew by {grown_mb:.0f} MB"
