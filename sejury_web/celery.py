"""The Celery application. Workers start with ``celery -A sejury_web worker``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")

app = Celery("sejury_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
