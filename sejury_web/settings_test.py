"""Settings for the test suite: the real settings, with a throwaway key and fast hashing."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-insecure-key")

from .settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
