"""Fixtures shared by the whole suite: users in each role, logged-in clients, data paths,
Celery in-process or in a real worker, and fake LLM servers the LLM layer is pointed at.

``make test`` runs the suite in parallel (pytest-xdist, one process per core); a test marked
``alone`` waits for the machine to itself (``pytest_runtest_protocol``).

Plain helpers (paths, the password, ``client_for``) live in ``tests.helpers``.
"""

import fcntl
import gc
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from pytest_django import DjangoDbBlocker
from pytest_django.fixtures import Settings

from sejury_web.celery import app as celery_app
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import LE2019_BUNDLE, PASSWORD, client_for
from tests.sejury_web.llm.fake_servers import GeminiServer, OpenAIServer
from tests.sejury_web.llm.helpers import Provided, point_at
from tests.workers import running_worker

# Tests that start a real worker, a browser or a server, or take the machine to themselves:
# each takes seconds where most take milliseconds.
SLOW_MARKERS = ("alone", "worker", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, so that the quick ones fill in the end under pytest-xdist,
    instead of a slow test starting last while the other processes have nothing left to do.
    (The sort is stable: each kind keeps its order.)"""
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in SLOW_MARKERS))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection() -> Iterator[object]:
    """Collection (importing the app, its libraries and every test module: about 450,000
    objects that live as long as the process) runs without the cyclic garbage collector,
    which walked them all some 8 times; they are then frozen (``gc.freeze``) so that its full
    passes during the tests walk only what the tests make. Garbage is collected as before."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()
        gc.collect()
        gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """Under pytest-xdist, a test marked ``alone`` runs (setup to teardown) while the other
    workers run none: they finish the test they are in and wait for it to end."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return (yield)
    with _the_machine(alone=item.get_closest_marker("alone") is not None):
        return (yield)


@contextmanager
def _the_machine(*, alone: bool) -> Iterator[None]:
    """A readers-writer lock across the run's xdist workers: each test holds it shared, an
    ``alone`` test exclusively. Everyone passes a gate first, one at a time, and an ``alone``
    test holds the gate until it has the lock, so that new tests cannot keep it waiting."""
    run_dir = settings.VAR_DIR.parent  # the run's directory: each worker has one inside
    with (run_dir / "alone.gate").open("a") as gate, (run_dir / "alone.lock").open("a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def django_db_setup(
    request: pytest.FixtureRequest,
    django_test_environment: None,
    django_db_blocker: DjangoDbBlocker,
    django_db_use_migrations: bool,
    django_db_keepdb: bool,
    django_db_createdb: bool,
    django_db_modify_db_settings: None,  # each xdist worker its own database name
) -> Iterator[None]:
    """pytest-django's test database (its fixture's steps), migrated once per run under
    pytest-xdist on SQLite: the first worker to need one migrates it and leaves a copy in the
    run's directory; the others copy that instead of migrating again (about 5 CPU-seconds
    each). Elsewhere (one process, PostgreSQL, ``--reuse-db``, ``--nomigrations``) Django
    creates it as usual."""
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations, _get_databases_for_setup

    if not django_db_use_migrations:
        _disable_migrations()
    keepdb = django_db_keepdb and not django_db_createdb
    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    test_name = connection.settings_dict["TEST"]["NAME"]
    shared = (
        os.environ.get("PYTEST_XDIST_WORKER")
        and connection.vendor == "sqlite"
        and test_name
        and aliases == {connection.alias}
        and not serialized_aliases
        and django_db_use_migrations
        and not django_db_keepdb
    )
    verbosity = request.config.option.verbose
    with django_db_blocker.unblock():
        if not shared:
            config = setup_databases(
                verbosity=verbosity,
                interactive=False,
                aliases=aliases,
                serialized_aliases=serialized_aliases,
                keepdb=keepdb,
            )
        else:
            run_dir = settings.VAR_DIR.parent
            migrated = run_dir / "migrated.sqlite3"
            with (run_dir / "migrated.lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait while the first migrates
                if migrated.exists():
                    config = _database_copied(migrated, Path(test_name))
                else:
                    config = setup_databases(
                        verbosity=verbosity,
                        interactive=False,
                        aliases=aliases,
                        serialized_aliases=serialized_aliases,
                    )
                    _sqlite_copy(Path(test_name), migrated)
    yield
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            teardown_databases(config, verbosity=verbosity)


def _sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (WAL and all), by SQLite's backup."""
    read, write = sqlite3.connect(source), sqlite3.connect(target)
    try:
        read.backup(write)
    finally:
        read.close()
        write.close()


def _database_copied(
    migrated: Path, test_name: Path
) -> list[tuple[BaseDatabaseWrapper, str, bool]]:
    """What Django's ``create_test_db`` leaves, from a copy of a migrated database: the
    connection on it, and how ``teardown_databases`` deletes it at the end."""
    test_name.unlink(missing_ok=True)
    _sqlite_copy(migrated, test_name)
    old_name = connection.settings_dict["NAME"]
    connection.close()
    settings.DATABASES[connection.alias]["NAME"] = str(test_name)
    connection.settings_dict["NAME"] = str(test_name)
    connection.ensure_connection()
    return [(connection, old_name, True)]


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
    """A fake server's port may be reused: forget what the last one refused. (An adapter not
    imported has learned nothing: importing both SDKs here cost every pytest process 1.5 s of
    CPU as it started, the xdist controller's before it started the workers.)"""
    yield
    for name in ("openai_chat", "gemini"):
        adapter = sys.modules.get(f"sejury_web.llm.providers.{name}")
        if adapter is not None:
            adapter.learned_forget()


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
