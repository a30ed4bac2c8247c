"""The SQLite broker and result store's SQLAlchemy parts, for the processes that use them.

SQLAlchemy (through kombu's transport and Celery's database backend) takes about half a
second to import: ``sejury_web.celery`` names these classes by path, as kombu's ``sqla``
transport and Celery's ``db`` backend, so a process imports them only when it connects to
the broker or the result store (a worker, a web process queueing a task), never for a
management command such as ``agreement_report`` that queues none.
"""

import sqlite3
from typing import Any

from celery.backends.database import DatabaseBackend as CeleryDatabaseBackend
from kombu.transport import sqlalchemy as kombu_sqlalchemy
from sqlalchemy import event
from sqlalchemy.engine import Engine


@event.listens_for(Engine, "connect")
def _sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    """The SQLite broker and result files in WAL mode, as the application's database is.

    kombu opens them in SQLite's default rollback-journal mode, where every fetch of a message
    (a write: it marks the message delivered) syncs the file to disk and blocks the readers.
    SQLAlchemy is used only by Celery here, so this touches the broker and results alone.
    """
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


class Transport(kombu_sqlalchemy.Transport):
    """kombu's SQLAlchemy transport, polling the broker ten times a second.

    The SQLite broker is polled: kombu's SQLAlchemy transport looks for new messages once a
    second by default, and a worker thread that finished its task waits for that look. A
    tenth of a second keeps judging's fan-out moving (bench/judging_throughput.py). It cannot
    be a broker transport option: this transport hands every option to SQLAlchemy's
    create_engine, which rejects it. Redis is not polled (BRPOP) and is unaffected."""

    polling_interval = 0.1


class DatabaseBackend(CeleryDatabaseBackend):
    """Celery's database result backend; importing this module put its files in WAL mode."""
