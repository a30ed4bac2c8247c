"""Fixtures shared by the whole suite: users in each role, logged-in clients, data paths,
Celery in-process or in a real worker, and fake LLM servers the LLM layer is pointed at.

``make test`` runs the suite in parallel (pytest-xdist, one process per core), then the tests
marked ``alone`` one at a time: ``--alone=skip`` and ``--alone=only`` pick them out.

Plain helpers (paths, the password, ``client_for``) live in ``tests.helpers``.
"""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from sejury_web.celery import app as celery_app
from sejury_web.llm.providers import openai_chat
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import LE2019_BUNDLE, PASSWORD, client_for
from tests.sejury_web.llm.fake_servers import GeminiServer, OpenAIServer
from tests.sejury_web.llm.helpers import Provided, point_at
from tests.workers import running_worker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--alone",
        choices=("with", "skip", "only"),
        default="with",
        help="the tests marked `alone`: run them with the rest (the default), skip them (in the "
        "parallel run of `make test`), or run only them (in its second, serial run)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--alone=skip`` leaves the ``alone`` tests out, ``--alone=only`` leaves the rest out."""
    choice = config.getoption("alone")
    if choice == "with":
        return
    alone = choice == "only"
    keep = [item for item in items if (item.get_closest_marker("alone") is not None) == alone]
    config.hook.pytest_deselected(
        items=[item for item in items if (item.get_closest_marker("alone") is not None) != alone]
    )
    items[:] = keep


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No ``alone`` test among those selected (``make test-fast -k ...``) is not a failure."""
    if (
        session.config.getoption("alone") == "only"
        and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture
def le2019_bundle() -> Path:
    """The real Defects4J patch-correctness data of Le et al. (read-only, never copied)."""
    if not LE2019_BUNDLE.is_file():
        pytest.skip(f"{LE2019_BUNDLE} is absent (a fresh clone has no ../shared)")
    return LE2019_BUNDLE


@pytest.fixture
def lead(db: None) -> User:
    return user_create(actor=None, username="lead", password=PASSWORD, roles=[Role.LEAD])


@pytest.fixture
def reviewer(db: None) -> User:
    return user_create(actor=None, username="reviewer", password=PASSWORD, roles=[Role.REVIEWER])


@pytest.fixture
def annotator(db: None) -> User:
    return user_create(actor=None, username="annotator", password=PASSWORD, roles=[Role.ANNOTATOR])


@pytest.fixture
def lead_client(lead: User) -> Client:
    return client_for(lead)


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return client_for(reviewer)


@pytest.fixture
def annotator_client(annotator: User) -> Client:
    return client_for(annotator)


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run inline, and a task that raises fails the test instead of a result."""
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_eager_propagates = False


@pytest.fixture
def worker(transactional_db: None, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker process on the test database; its log is ``worker.log``."""
    with running_worker(tmp_path / "worker.log") as process:
        yield process


@pytest.fixture(autouse=True)
def _forget_output_modes() -> Iterator[None]:
    """A fake server's port may be reused: forget what the last one's output mode was."""
    yield
    openai_chat._modes.clear()


@pytest.fixture
def openai_server(settings: Settings, tmp_path: Path) -> Iterator[OpenAIServer]:
    """A fake OpenAI-compatible server, with the LLM layer's settings pointing at it."""
    with OpenAIServer() as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        yield server


@pytest.fixture(params=["openai", "gemini"])
def provided(
    request: pytest.FixtureRequest, settings: Settings, tmp_path: Path
) -> Iterator[Provided]:
    """A fake server of each wire protocol in turn, with the LLM layer pointing at it."""
    if request.param == "openai":
        server = request.getfixturevalue("openai_server")
        point_at(settings, tmp_path, OPENAI_API_KEY="sk-test")
        yield Provided("openai", server, "gpt-4o-mini")
    else:
        with GeminiServer() as gemini:
            point_at(
                settings,
                tmp_path,
                PROVIDER="gemini",
                GEMINI_API_KEY="test-key",
                GEMINI_BASE_URL=gemini.url,
            )
            yield Provided("gemini", gemini, "gemini-2.5-pro")
