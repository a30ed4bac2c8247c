"""Settings for the test suite: the real settings, with a throwaway key, fast hashing, and
a private var/ directory, so tests never touch a developer's database or Celery broker.

``make test`` runs the suite in one process per core (pytest-xdist: ``PYTEST_XDIST_WORKER`` is
gw0, gw1...). Each has a var/ directory of its own, and so its own SQLite database and SQLite
broker; on a Redis broker, a Redis database of its own. Both are set in the environment, which
the processes a test starts (Celery workers, ``manage.py judge``) inherit: they land on the
same ones, whichever settings module they load.
"""

import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

_REDIS_DATABASES = 16  # Redis's default number of databases, 0 to 15

os.environ.setdefault("SECRET_KEY", "tests-only-insecure-key")
# Set in the environment (not only here) so worker processes started by tests share it.
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-tests-"))


def _for_xdist_worker(worker: str) -> None:
    """Move this xdist worker into a var/ directory and a Redis database of its own.

    The xdist controller made the run's var/ directory before it started the workers, which
    inherit it: each takes a subdirectory. Its number N picks Redis database N past the one
    ``CELERY_BROKER_URL`` names.
    """
    os.environ["SEJURY_VAR_DIR"] = str(Path(os.environ["SEJURY_VAR_DIR"]) / worker)
    broker = urlsplit(os.environ.get("CELERY_BROKER_URL", ""))
    if broker.scheme in ("redis", "rediss"):
        database = int(broker.path.strip("/") or 0) + int(worker.removeprefix("gw"))
        if database >= _REDIS_DATABASES:
            raise ValueError(
                f"xdist worker {worker} would use Redis database {database}, past the last "
                f"({_REDIS_DATABASES - 1}): run fewer workers (pytest -n) or start from a lower one"
            )
        os.environ["CELERY_BROKER_URL"] = broker._replace(path=f"/{database}").geturl()
    # Done once: the processes this worker starts inherit the result, and this variable.
    os.environ["SEJURY_TESTS_XDIST_WORKER"] = worker


_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST_WORKER and os.environ.get("SEJURY_TESTS_XDIST_WORKER") != _XDIST_WORKER:
    _for_xdist_worker(_XDIST_WORKER)

from .settings import *  # noqa: E402, F403
from .settings import DATABASES, SEJURY_LLM, VAR_DIR  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not SQLite's in-memory default, so that worker processes can open it too.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

# Tests never reach a real provider, whatever keys the developer's shell holds; the LLM tests
# point the layer at local protocol servers instead.
SEJURY_LLM = {
    **SEJURY_LLM,
    "PROVIDER": "offline",
    "MODEL": "",
    "GEMINI_API_KEY": "",
    "GEMINI_BASE_URL": "",
    "OPENAI_API_KEY": "",
    "OPENAI_BASE_URL": "",
}
