"""The Celery application. Workers start with ``celery -A sejury_web worker``."""

import os
from typing import Any

from celery import Celery
from celery.signals import worker_init
from kombu import transport as kombu_transports

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
# A starting worker skips Django's system checks (celery's ``--skip-checks``, unless the
# environment says otherwise): Celery's Django fixup would run them all and discard what they
# find, and reading the URLconf and the template libraries for them imports every page, the
# API (ninja, pydantic) and the report's numpy and scipy, which no task needs at start (more
# than a second of CPU a worker). ``manage.py migrate`` and ``check --deploy`` run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "true")

app = Celery("sejury_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The SQLite broker (kombu's ``sqla`` transport) and result store (Celery's ``db`` backend)
# through ``sejury_web.broker``: its polling interval and WAL mode, and SQLAlchemy imported
# only by a process that connects to them (half a second of every command's start otherwise).
for _alias in ("sqla", "sqlalchemy"):
    kombu_transports.TRANSPORT_ALIASES[_alias] = "sejury_web.broker:Transport"
app.loader.override_backends = {"db": "sejury_web.broker:DatabaseBackend"}


@worker_init.connect(weak=False, dispatch_uid="sejury_web.sdks_preload")
def _sdks_preload(**_: Any) -> None:
    """A worker imports the provider SDKs before it says it is ready, not in its first task."""
    from sejury_web.llm.providers import sdks_preload

    sdks_preload()
