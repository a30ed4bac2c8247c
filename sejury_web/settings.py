"""Settings, all of them overridable from the environment.

Embedded defaults (SQLite database, Celery broker on SQLite through kombu's SQLAlchemy
transport) need no server; ``DATABASE_URL`` and ``CELERY_BROKER_URL`` switch the same code
to PostgreSQL and Redis.
"""

import ipaddress
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("SEJURY_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# A development key is acceptable only with DEBUG on; a deployment must set SECRET_KEY.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("Set SECRET_KEY (or DEBUG=1 for local development).")
    SECRET_KEY = "insecure-development-key-do-not-deploy"  # noqa: S105 - DEBUG only

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "axes",
    "rubrics",
    "judging",
    "sejury_web",
    "sejury_web.llm",
    "api",
]

MIDDLEWARE = [
    # First: an API request over the largest body is refused before anything reads it.
    "api.body_limit.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files from STATIC_ROOT (after collectstatic), compressed and with cache headers,
    # by whatever serves the app (gunicorn): no proxy rule needed. Before the rest, as
    # WhiteNoise asks, so a file costs no session or database work.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "sejury_web.security.SecurityHeadersMiddleware",
    # Errors under /api/v1/ as JSON, never the HTML error pages.
    "api.errors.JsonErrorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page requires login, except the ones marked with @login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A NUL in a path or a query: 404, or 400 (a page) or 422 (the API), before any view.
    "api.errors.ApiNulRefusalMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it answers a locked-out login with the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "sejury_web.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sejury_web.roles.roles_context",
            ],
        },
    },
]

WSGI_APPLICATION = "sejury_web.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'sejury.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed during a write; IMMEDIATE transactions and a busy timeout
    # make concurrent writers (web process, workers) wait instead of failing.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The proxies whose X-Forwarded-For is believed (sejury_web/client_address.py): addresses or
# networks, comma-separated. Empty: the peer's address is the client's.
SEJURY_TRUSTED_PROXIES = env_list("SEJURY_TRUSTED_PROXIES", "")
for _proxy in SEJURY_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"SEJURY_TRUSTED_PROXIES: {_proxy!r} is not an IP address or network"
        ) from None

# Login throttling (django-axes; sejury_web/login_throttle.py): failed logins are counted per
# username and address (SEJURY_LOGIN_FAILURE_LIMIT), per username from anywhere
# (SEJURY_LOGIN_USERNAME_FAILURE_LIMIT) and per address for every username
# (SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT); reaching one locks that out for a cool-off that starts
# at a minute and doubles with each lockout of the day (up to an hour). A login resets the
# username's counts.
SEJURY_LOGIN_USERNAME_FAILURE_LIMIT = int(
    os.environ.get("SEJURY_LOGIN_USERNAME_FAILURE_LIMIT", "20")
)
SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT = int(
    os.environ.get("SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT", "100")
)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("SEJURY_LOGIN_FAILURE_LIMIT", "5"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username", "ip_address"]
AXES_COOLOFF_TIME = "sejury_web.login_throttle.cool_off"
AXES_HANDLER = "sejury_web.login_throttle.LoginThrottleHandler"
AXES_CLIENT_IP_CALLABLE = "sejury_web.client_address.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The product is in English only: no translation machinery (Django's own advice, "for
# performance"). Formats are still en-us's, so every page reads the same, byte for byte; a
# number in a template no longer asks for the active language (a third of a 300-patch
# annotation queue's time, and of every table's).
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns at start-up about a missing one
# collectstatic also writes a gzipped copy of each file, which WhiteNoise serves to browsers.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
# Behind an HTTPS proxy (SEJURY_HTTPS=1): secure cookies, and trust the proxy's scheme header.
if env_bool("SEJURY_HTTPS", False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# A plain-HTTP request is redirected to HTTPS (SEJURY_SSL_REDIRECT=1; the proxy may do it
# instead). HSTS (SEJURY_HSTS_SECONDS > 0) tells browsers to use only HTTPS for that long:
# start short, since a browser that saw it cannot be told otherwise before it expires.
SECURE_SSL_REDIRECT = env_bool("SEJURY_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = int(os.environ.get("SEJURY_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SEJURY_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SEJURY_HSTS_PRELOAD", False)
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Bundle import: uploads and files larger than this are refused before parsing.
SEJURY_BUNDLE_MAX_BYTES = int(os.environ.get("SEJURY_BUNDLE_MAX_BYTES", str(64 * 1024 * 1024)))
# A bundle uploaded through the page and larger than this is imported by the worker, with
# live progress, instead of within the request.
SEJURY_BUNDLE_WORKER_BYTES = int(os.environ.get("SEJURY_BUNDLE_WORKER_BYTES", str(4 * 1024 * 1024)))
# An import reports at most this many errors (the file may have thousands).
SEJURY_BUNDLE_MAX_ERRORS = int(os.environ.get("SEJURY_BUNDLE_MAX_ERRORS", "50"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# The JSON API (api/): requests per token per window, and failed bearer tokens per client
# address per window; past either, 429 with Retry-After.
SEJURY_API = {
    "RATE": int(os.environ.get("SEJURY_API_RATE", "600")),
    "RATE_WINDOW": int(os.environ.get("SEJURY_API_RATE_WINDOW", "60")),
    "AUTH_FAILURES": int(os.environ.get("SEJURY_API_AUTH_FAILURES", "20")),
    "AUTH_FAILURE_WINDOW": int(os.environ.get("SEJURY_API_AUTH_FAILURE_WINDOW", "600")),
}

# Run webhooks (judging/runs/webhooks.py): a run's URL is called when it ends, signed with
# HMAC-SHA256 under SECRET (a run cannot be given a webhook while it is unset). BASE_URL
# ("https://sejury.example") makes the body's links absolute; unset, they use the scheme and
# host the run was created through. Retries: MAX_ATTEMPTS POSTs, BACKOFF_BASE seconds before
# the second, doubling (60 s, 2 min, … 16 min: about 31 minutes over 6 attempts).
SEJURY_WEBHOOK = {
    "SECRET": os.environ.get("SEJURY_WEBHOOK_SECRET", ""),
    "BASE_URL": os.environ.get("SEJURY_BASE_URL", "").strip().rstrip("/"),
    "TIMEOUT": float(os.environ.get("SEJURY_WEBHOOK_TIMEOUT", "10")),
    "MAX_ATTEMPTS": int(os.environ.get("SEJURY_WEBHOOK_MAX_ATTEMPTS", "6")),
    "BACKOFF_BASE": float(os.environ.get("SEJURY_WEBHOOK_BACKOFF_BASE", "60")),
    # A Retry-After longer than this is shortened to it.
    "RETRY_AFTER_MAX": float(os.environ.get("SEJURY_WEBHOOK_RETRY_AFTER_MAX", "3600")),
}

# The LLM layer (sejury_web/llm/). Read at call time, so a test or a run can override it.
# With no provider named and no key configured, the provider is ``offline``.
SEJURY_LLM = {
    "PROVIDER": os.environ.get("SEJURY_LLM_PROVIDER", "").strip().lower(),
    "MODEL": os.environ.get("SEJURY_LLM_MODEL", "").strip(),
    "GEMINI_API_KEY": os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY", ""),
    # Only for proxies and the tests' local Gemini-protocol server.
    "GEMINI_BASE_URL": os.environ.get("GEMINI_BASE_URL", ""),
    "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", ""),
    "OPENAI_BASE_URL": os.environ.get("OPENAI_BASE_URL", ""),
    "MAX_CONCURRENCY": int(os.environ.get("SEJURY_LLM_MAX_CONCURRENCY", "8")),
    "RPM": int(os.environ.get("SEJURY_LLM_RPM", "0")),  # 0: no requests-per-minute limit
    "TIMEOUT": float(os.environ.get("SEJURY_LLM_TIMEOUT", "120")),
    # The output token limit of a request that sets none (0: none). A small model can loop
    # inside a JSON string until its context is full; this makes that a clear failure.
    "MAX_OUTPUT_TOKENS": int(os.environ.get("SEJURY_LLM_MAX_OUTPUT_TOKENS", "0")),
    "MAX_ATTEMPTS": int(os.environ.get("SEJURY_LLM_MAX_ATTEMPTS", "5")),
    "BACKOFF_BASE": float(os.environ.get("SEJURY_LLM_BACKOFF_BASE", "1.0")),
    "BACKOFF_MAX": float(os.environ.get("SEJURY_LLM_BACKOFF_MAX", "60")),
    # A Retry-After longer than this (a daily quota, say) fails the call instead of waiting.
    "RETRY_AFTER_MAX": float(os.environ.get("SEJURY_LLM_RETRY_AFTER_MAX", "300")),
    # A model the price table does not know costs $0 on a server on the loopback (llama.cpp,
    # Ollama); 0 when that address is a tunnel or proxy to a paid service.
    "LOCAL_FREE": os.environ.get("SEJURY_LLM_LOCAL_FREE", "1").strip() != "0",
    "LOCK_DIR": VAR_DIR / "llm-limits",
    # Seconds between two looks at a batch-mode run's open batch jobs (judging.runs.batch).
    "BATCH_POLL_SECONDS": float(os.environ.get("SEJURY_LLM_BATCH_POLL_SECONDS", "60")),
    # Batch results stored per transaction (sejury_web.llm.batch.jobs).
    "BATCH_STORE_CHUNK": int(os.environ.get("SEJURY_LLM_BATCH_STORE_CHUNK", "500")),
}

# Celery
CELERY_BROKER_URL = os.environ.get(
    "CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
)
CELERY_RESULT_BACKEND = os.environ.get(
    "CELERY_RESULT_BACKEND",
    # With a Redis broker, results go to Redis too; otherwise to SQLite beside the broker.
    CELERY_BROKER_URL
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}",
)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A task is acknowledged after it ran, so a worker killed mid-task leaves it to another.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Each worker thread has up to 4 tasks waiting for it in the worker. With 1, a thread that
# finishes a task idles until the consumer fetches the next one, and on the SQLite broker the
# consumer looks only once a second (kombu's polling_interval): bench/judging_throughput.py
# measured 45 s at 1 against 31-34 s at 4 (500 patches, 16 threads; ideal 25 s). The price:
# one worker may hold 4 tasks per thread that another, idle worker could have run. What a
# killed worker had reserved is judged again when a worker restarts (runs_resume_unfinished).
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors": {"()": "sejury_web.logs.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # The SDKs' HTTP clients log every request at INFO; LLMCall rows already record them.
        **{name: {"level": "WARNING"} for name in ("httpx2", "httpx", "openai", "google_genai")},
        # An ordinary 403 or 404 is one line, without a traceback.
        "django.request": {"filters": ["client_errors"]},
        # django-axes: failed logins and lockouts (WARNING), not its bookkeeping (INFO).
        "axes": {"level": "WARNING"},
    },
}
