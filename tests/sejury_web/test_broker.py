"""The SQLite broker and result store, through ``sejury_web.broker``: kombu's ``sqla``
transport polling ten times a second, Celery's ``db`` backend, both files in WAL mode."""

import sqlite3
from pathlib import Path

from celery.app.backends import by_url
from kombu import Connection

from sejury_web.broker import DatabaseBackend, Transport
from sejury_web.celery import app


def test_the_sqlite_broker_polls_ten_times_a_second_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "broker.sqlite3"
    with Connection(f"sqla+sqlite:///{path}") as connection:
        assert isinstance(connection.transport, Transport)
        assert connection.transport.polling_interval == 0.1
        queue = connection.SimpleQueue("probe")
        queue.put({"n": 1})
        message = queue.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
        queue.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_sqlite_result_store_is_celerys_database_backend_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite3"
    backend_class, url = by_url(f"db+sqlite:///{path}", app.loader)
    assert backend_class is DatabaseBackend
    backend = backend_class(app=app, url=url)
    assert backend.get_task_meta("no-such-task")["status"] == "PENDING"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
