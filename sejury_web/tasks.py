from typing import Any

from celery import shared_task
from django.db import connection


@shared_task(name="sejury_web.ping")
def ping() -> dict[str, Any]:
    """Prove a worker is alive and reaches the database (used by health checks and tests)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        (one,) = cursor.fetchone()
    return {
        "pong": one == 1,
        "database": connection.vendor,
        "name": str(connection.settings_dict["NAME"]),
    }
