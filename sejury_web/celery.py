"""The Celery application. Workers start with ``celery -A sejury_web worker``."""

import os

from celery import Celery
from kombu.transport import sqlalchemy as kombu_sqlalchemy

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
