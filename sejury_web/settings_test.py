"""Settings for the test suite: the real settings, with a throwaway key, fast hashing, and
a private var/ directory, so tests never touch a developer's database or Celery broker."""

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "tests-only-insecure-key")
# Set in the environment (not only here) so worker processes started by tests share it.
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-tests-"))

from .settings import *  # noqa: F403
from .settings import DATABASES, SEJURY_LLM, VAR_DIR

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
