"""The Celery application. Workers start with ``celery -A sejury_web worker``."""

import os
import sqlite3
from typing import Any

from celery import Celery
from celery.signals import worker_init
from kombu.transport import sqlalchemy as kombu_sqlalchemy
from sqlalchemy import event
from sqlalchemy.engine import Engine

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")

app = Celery("sejury_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The SQLite broker is polled: kombu's SQLAlchemy transport looks for new messages once a
# second by default, and a worker thread that finished its task waits for that look. A tenth
# of a second keeps judging's fan-out moving (bench/judging_throughput.py). It cannot be a
# broker transport option: this transport hands every option to SQLAlchemy's create_engine,
# which rejects it. Redis is not polled (BRPOP) and is unaffected.
kombu_sqlalchemy.Transport.polling_interval = 0.1


@worker_init.connect(weak=False, dispatch_uid="sejury_web.sdks_preload")
def _sdks_preload(**_: Any) -> None:
    """A worker imports the provider SDKs before it says it is ready, not in its first task."""
    from sejury_web.llm.providers import sdks_preload

    sdks_preload()


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
