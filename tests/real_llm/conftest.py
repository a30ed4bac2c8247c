"""The real local model: found on the loopback, or the test is skipped saying how to start it
(or fails, when ``SEJURY_REQUIRE_REAL_LLM=1``, as CI sets after ``make llm-local``)."""

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from tests.sejury_web.llm.helpers import point_at

DEFAULT_PORT = 8091  # scripts/llm_local.py's


@dataclass(frozen=True)
class RealServer:
    url: str  # http://127.0.0.1:PORT
    model: str  # the server's alias

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read() or b"{}")


def server_url() -> str:
    explicit = os.environ.get("SEJURY_REAL_LLM_URL", "").rstrip("/")
    port = os.environ.get("SEJURY_LLM_LOCAL_PORT") or DEFAULT_PORT
    return explicit.removesuffix("/v1") or f"http://127.0.0.1:{port}"


def find_server() -> RealServer | str:
    """The server, or why there is none."""
    url = server_url()
    try:
        _get(f"{url}/health")
        models = _get(f"{url}/v1/models")
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"no model server answers at {url} ({error}); `make llm-local` starts one"
    data = models.get("data")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return f"{url}/v1/models lists no model"
    return RealServer(url=url, model=str(data[0]["id"]))


@pytest.fixture(scope="session")
def real_server() -> RealServer:
    found = find_server()
    if isinstance(found, RealServer):
        return found
    if os.environ.get("SEJURY_REQUIRE_REAL_LLM") == "1":
        pytest.fail(f"SEJURY_REQUIRE_REAL_LLM=1 but {found}")
    pytest.skip(found)


@pytest.fixture
def real_llm(real_server: RealServer, settings: Settings, tmp_path: Path) -> RealServer:
    """The LLM layer of this process pointed at the real server."""
    point_at(
        settings,
        tmp_path,
        PROVIDER="openai",
        MODEL=real_server.model,
        OPENAI_BASE_URL=real_server.base_url,
        OPENAI_API_KEY="local",
        MAX_CONCURRENCY=1,
        TIMEOUT=600.0,
        MAX_OUTPUT_TOKENS=1024,
        MAX_ATTEMPTS=2,
        LOCAL_FREE=True,
    )
    return real_server


def worker_env(server: RealServer) -> dict[str, str]:
    """What a worker process needs to call the same server."""
    return {
        "DJANGO_SETTINGS_MODULE": "tests.real_llm.settings",
        "SEJURY_REAL_LLM_BASE_URL": server.base_url,
        "SEJURY_REAL_LLM_MODEL": server.model,
    }
