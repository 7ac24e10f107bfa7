"""BenchHub settings, read from the environment.

With nothing set, BenchHub runs on an embedded default: a SQLite file under
var/ and Celery tasks executed in-process, so a newcomer needs no server.
Production sets DATABASE_URL (PostgreSQL), REDIS_URL, SECRET_KEY and
ALLOWED_HOSTS.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from benchhub.lib.env import (
    envbool,
    envchoice,
    envfloat,
    envint,
    envlist,
    envrate,
    envstr,
    envurl,
    secret_key_problem,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("BENCHHUB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])

_DEV_SECRET_KEY = "insecure-development-key-never-use-in-production"  # noqa: S105
SECRET_KEY = envstr("SECRET_KEY", _DEV_SECRET_KEY)
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "testserver", "[::1]"}
_PUBLIC = not DEBUG and not set(ALLOWED_HOSTS) <= _LOCAL_HOSTS
# Serving real host names with a key anyone can read (the development one,
# compose's placeholder) or guess would let anyone forge sessions.
if _PUBLIC and (problem := secret_key_problem(SECRET_KEY)):
    raise ImproperlyConfigured(
        f"SECRET_KEY {problem}: ALLOWED_HOSTS names a real host, so set SECRET_KEY to "
        "a random value of 50+ characters (python -c 'import secrets; "
        "print(secrets.token_urlsafe(50))')"
    )

# HTTPS terminated by a proxy in front of gunicorn (nginx, a load balancer)
# that sets X-Forwarded-Proto: trust it, redirect plain HTTP, send cookies
# over HTTPS only and tell browsers to stay on HTTPS (HSTS). /healthz stays
# reachable over plain HTTP for the proxy's own checks.
HTTPS_PROXY = envbool("BENCHHUB_HTTPS_PROXY", False)
if HTTPS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz(/live|/ready)?$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", True)
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # before staticfiles: its runserver, extended (answers sent at once)
    "benchhub.devserver",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "benchhub.accounts",
    "benchhub.results",
    "benchhub.imports",
    "benchhub.baselines",
    "benchhub.comparisons",
    "benchhub.leaderboards",
    "benchhub.releases",
    "benchhub.studies",
    "benchhub.moderation",
]

MIDDLEWARE = [
    "benchhub.lib.jsonbody.ContentCodingMiddleware",
    "benchhub.lib.jsonbody.ChunkedBodyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "benchhub.lib.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "benchhub.lib.admin.AdminQueryMiddleware",
]

ROOT_URLCONF = "benchhub.urls"
CSRF_FAILURE_VIEW = "benchhub.lib.api.csrf_failure"  # JSON under /api/
WSGI_APPLICATION = "benchhub.wsgi.application"

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
            ],
        },
    },
]

# dj_database_url takes any engine it knows (mysql, oracle, …) and answers a
# scheme it does not with a ValueError that names no variable. BenchHub runs on
# PostgreSQL, and on SQLite for the embedded default.
DATABASE_URL = envurl("DATABASE_URL", "", schemes=("postgres", "postgresql", "sqlite"))
if not DATABASE_URL:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded default's home
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL or f"sqlite:///{VAR_DIR / 'benchhub.sqlite3'}",
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 600, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database that does not answer is an error in seconds, not a hung worker.
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = envint(
        "DATABASE_CONNECT_TIMEOUT", 5, minimum=1
    )
    # The upload's raw statements are prepared once they have run this many
    # times on a connection (lib/prepared.py; Django prepares nothing by
    # default). Off behind a pooler that cannot carry prepared statements
    # (PgBouncer in transaction mode before 1.21).
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = (
        5 if envbool("DATABASE_PREPARED_STATEMENTS", True) else None
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default under concurrent uploads. WAL: readers go on while
    # one writer writes. BEGIN IMMEDIATE: a transaction takes the write lock
    # when it starts, so one that read first (an upload, the in-process
    # baselines round) waits its turn, up to the busy timeout, instead of
    # being refused its lock upgrade ("database is locked") at once.
    # Its own backend queues one process's writers in order (lib/sqlite).
    # synchronous=NORMAL: in WAL mode a commit no longer waits for the disk
    # (the log is synced at checkpoints); the file stays consistent, and a
    # power cut may lose the last commits, not a process crash. Each upload
    # and in-process round commits, and under FULL each held the write lock
    # through an fsync.
    DATABASES["default"]["ENGINE"] = "benchhub.lib.sqlite"
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        transaction_mode="IMMEDIATE",
        timeout=envint("DATABASE_BUSY_TIMEOUT", 20, minimum=1),
    )
    # The comparisons' covering index (measurement_metric_covering) is a
    # plain index on SQLite, which has no INCLUDE columns; that is all the
    # warning says, on every command a newcomer runs.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
# A PostgreSQL streaming replica of DATABASE_URL: the reads of public pages
# and read-only API requests go to it, writes and read-your-writes to the
# primary, and to the primary alone while it does not answer
# (benchhub/lib/replica.py, docs/operations.md).
DATABASE_REPLICA_URL = envurl("DATABASE_REPLICA_URL", "", schemes=("postgres", "postgresql"))
# After a user's write, their reads stay on the primary this long (a replica
# replays a moment behind); a replica that did not answer is asked again after
# this long.
DATABASE_REPLICA_STICKY_SECONDS = envint("DATABASE_REPLICA_STICKY_SECONDS", 15, minimum=1)
DATABASE_REPLICA_RETRY_SECONDS = envint("DATABASE_REPLICA_RETRY_SECONDS", 10, minimum=1)
if DATABASE_REPLICA_URL:
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URL is set, but DATABASE_URL is not PostgreSQL: a replica "
            "replicates a PostgreSQL primary; set DATABASE_URL to it, or unset DATABASE_REPLICA_URL"
        )
    DATABASES["replica"] = dj_database_url.parse(
        DATABASE_REPLICA_URL,
        conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
        conn_health_checks=True,
    )
    # The primary's connect timeout and prepared statements, unless its own URL says
    # otherwise (?sslmode=… on the replica's URL stays).
    DATABASES["replica"]["OPTIONS"] = {
        **DATABASES["default"]["OPTIONS"],
        **DATABASES["replica"].setdefault("OPTIONS", {}),
    }
    # Tests make no database of its own for it: it reads the primary's.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["benchhub.lib.replica.ReplicaRouter"]
    # Around everything that reads: the sessions' and the views' queries.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware"),
        "benchhub.lib.replica.ReplicaReadsMiddleware",
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:submissions"
LOGOUT_REDIRECT_URL = "results:home"
# Password-reset mail: printed on the console unless the environment names
# another backend (e.g. django.core.mail.backends.smtp.EmailBackend + EMAIL_HOST).
# Checked to import when the apps are ready (accounts/apps.py).
EMAIL_BACKEND = envstr("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "BenchHub <benchhub@localhost>")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "benchhub.lib.staticfiles.HashedStaticFilesStorage"},
}

# Celery: with REDIS_URL unset, tasks run in the calling process (embedded
# default); with it set, they go to Redis and a worker runs them. Both
# readers of it know redis:// and rediss:// only: a misspelt scheme failed
# the first request that counted a rate (500), and the worker at its start
# with "No such transport", naming no variable. In-process, Celery still
# takes a producer from the broker's pool for every task: a memory:// URL
# without a host had kombu log a WARNING ("No hostname was supplied") on each
# upload of `make run`, a newcomer's first sight of a working site.
REDIS_URL = envurl("REDIS_URL", "", schemes=("redis", "rediss"))
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker goes away reconnects, however long the outage: the
# default gives up after 100 tries and ends the worker (docker/worker-
# supervised.sh would start it again; this keeps it from having to).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Redis answering an error to the worker's BRPOP (UNBLOCKED when it turns
# replica, READONLY while it is one) restarts the consumer, as a lost
# connection does, instead of ending the worker.
CELERY_BROKER_CHANNEL_ERROR_RETRY = True

# Comparison answers kept until the data behind them changes
# (benchhub/comparisons/kept.py): for at most this many seconds (0 keeps
# none: every request computes its answer), and, in the database cache of the
# embedded default, at most this many answers (on Redis: its maxmemory).
BENCHHUB_COMPARISON_KEEP_SECONDS = envint("BENCHHUB_COMPARISON_KEEP_SECONDS", 86_400, minimum=0)
BENCHHUB_COMPARISON_KEEP_ENTRIES = envint("BENCHHUB_COMPARISON_KEEP_ENTRIES", 2000, minimum=1)
# A kept answer whose data changed is served for this many seconds after the
# change, while the worker computes it again (0: computed on request at once).
BENCHHUB_COMPARISON_STALE_SECONDS = envint("BENCHHUB_COMPARISON_STALE_SECONDS", 30, minimum=0)
# Computed comparisons of the public view read measurement packs
# (benchhub/comparisons/packs.py) where they are current; false reads the
# rows always (to compare the two).
BENCHHUB_COMPARISON_PACKS = envbool("BENCHHUB_COMPARISON_PACKS", True)

# One cache for throttles and sign-in counters: shared by every process on
# Redis in production, per process on the embedded default. Two sites (or two
# test processes) on one Redis database keep apart by their key prefixes.
CACHE_KEY_PREFIX = envstr("BENCHHUB_CACHE_KEY_PREFIX", "benchhub")
CACHES = {
    "default": {
        # Redis away: reads miss, writes are dropped, requests go on (benchhub/lib/cache.py).
        "BACKEND": "benchhub.lib.cache.TolerantRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CACHE_KEY_PREFIX,
    }
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "KEY_PREFIX": CACHE_KEY_PREFIX,
    },
    # Kept comparison answers and the versions of the data they read
    # (benchhub/comparisons/kept.py): shared by every process, Redis in
    # production, the database on the embedded default (its table made by
    # the comparisons' migrations). Failures reach kept.py, which computes
    # the answer instead.
    "kept": {
        "BACKEND": "benchhub.lib.cache.ThreadClientRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": f"{CACHE_KEY_PREFIX}:kept",
    }
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "comparisons_kept_cache",
        "KEY_PREFIX": f"{CACHE_KEY_PREFIX}:kept",
        "OPTIONS": {"MAX_ENTRIES": BENCHHUB_COMPARISON_KEEP_ENTRIES},
    },
}

# A run is ranked (a percentile, "better than x %") only among at least this
# many other comparable results: among fewer, one result moves it by tens of
# percent.
RANK_MIN_RESULTS = envint("BENCHHUB_RANK_MIN_RESULTS", 10, minimum=1)

# A sweep picks up baselines whose refresh was abandoned (a worker died
# holding the claim); run the worker with -B, or a separate celery beat.
CELERY_BEAT_SCHEDULE = {
    "baselines-sweep": {
        "task": "benchhub.baselines.tasks.baselines_refresh_task",
        # The sweep also queues the refreshes an upload could not queue (Redis down).
        # At least a second: 0 or less would have beat queue it without a pause.
        "schedule": float(envint("BENCHHUB_BASELINES_SWEEP_SECONDS", 300, minimum=1)),
    },
    "baselines-nightly": {
        "task": "benchhub.baselines.tasks.baselines_recompute_all_task",
        "schedule": 24 * 3600.0,
    },
    "moderation-alias-sweep": {
        "task": "benchhub.moderation.tasks.alias_rules_apply_task",
        # The stored rows of alias rules changed while the broker failed.
        "schedule": float(envint("BENCHHUB_ALIAS_SWEEP_SECONDS", 300, minimum=1)),
    },
    "comparisons-refresh": {
        "task": "benchhub.comparisons.tasks.comparisons_refresh_task",
        # Kept answers people ask for, computed again after their data changed.
        "schedule": float(envint("BENCHHUB_COMPARISON_REFRESH_SECONDS", 60, minimum=1)),
    },
    "moderation-autoflag": {
        "task": "benchhub.moderation.tasks.moderation_autoflag_task",
        "schedule": 60.0,
    },
}

# Uploads: the submission endpoint answers 413 above this many bytes.
BENCHHUB_MAX_UPLOAD_BYTES = envint("BENCHHUB_MAX_UPLOAD_BYTES", 2 * 1024 * 1024, minimum=1)
# Django's own limit must not trip first: it would answer 400, not 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = BENCHHUB_MAX_UPLOAD_BYTES + 1024 * 1024

# How many reverse proxies stand in front of the web server (docker-compose.yml's nginx:
# 1). Per-address limits read the address the nearest trusted proxy saw; with 0 they
# read REMOTE_ADDR. A client's own X-Forwarded-For header is never believed.
BENCHHUB_TRUSTED_PROXIES = envint("BENCHHUB_TRUSTED_PROXIES", 0, minimum=0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "benchhub.accounts.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "benchhub.lib.api.FormatNegotiation",
    "DEFAULT_PARSER_CLASSES": ["benchhub.lib.jsonbody.JsonParser"],
    # django-filter's, refusing an ?ordering= other than the list's own (lib/ordering.py)
    "DEFAULT_FILTER_BACKENDS": ["benchhub.lib.ordering.FilterWithFixedOrdering"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "benchhub.lib.api.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "benchhub.lib.pagination.IdCursorPagination",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "NUM_PROXIES": BENCHHUB_TRUSTED_PROXIES,
    "DEFAULT_THROTTLE_CLASSES": [
        "benchhub.accounts.throttles.TokenRateThrottle",
        "benchhub.accounts.throttles.UserRateThrottle",
        "benchhub.accounts.throttles.AnonRateThrottle",
    ],
}

# API request rates, "<requests>/<second|minute|hour|day>", read on every
# request (benchhub.accounts.throttles). A token and its user are counted
# apart, so one leaked token cannot spend its owner's whole allowance.
BENCHHUB_THROTTLE_RATES = {
    "token": envrate("BENCHHUB_THROTTLE_TOKEN", "120/minute"),
    "user": envrate("BENCHHUB_THROTTLE_USER", "600/minute"),
    "anon": envrate("BENCHHUB_THROTTLE_ANON", "600/minute"),
}

# Failed sign-ins and wrong API tokens: after this many from one address (or
# for one username) within the window, further attempts are refused until
# the window has passed. A window of 0 or less would keep no count at all
# (the cache lets such a key expire at once): no limit.
BENCHHUB_AUTH_FAILURES_ALLOWED = envint("BENCHHUB_AUTH_FAILURES_ALLOWED", 10, minimum=1)
BENCHHUB_AUTH_FAILURE_WINDOW = envint("BENCHHUB_AUTH_FAILURE_WINDOW", 300, minimum=1)
# Sign-ins: per username and address, the wait doubles after the first few failures, up
# to this many seconds; one address may fail this many times in a window over all names.
BENCHHUB_SIGNIN_MAX_DELAY = envint("BENCHHUB_SIGNIN_MAX_DELAY", 300, minimum=1)
BENCHHUB_SIGNIN_ADDRESS_FAILURES = envint("BENCHHUB_SIGNIN_ADDRESS_FAILURES", 50, minimum=1)

# Accounts created from one client address within the window; the next
# sign-up from it is refused (429) until the window has passed.
BENCHHUB_SIGNUPS_ALLOWED = envint("BENCHHUB_SIGNUPS_ALLOWED", 5, minimum=1)
BENCHHUB_SIGNUP_WINDOW = envint("BENCHHUB_SIGNUP_WINDOW", 3600, minimum=1)

# A pending (or approved-on-arrival) result whose outlier score reaches this
# (in absolute value; 3.5 is Iglewicz and Hoaglin's cut) is flagged for a
# moderator, with the evidence. Above 0: at 0 or less every result is flagged.
BENCHHUB_AUTOFLAG_SCORE = envfloat("BENCHHUB_AUTOFLAG_SCORE", 3.5, above=0)

SPECTACULAR_SETTINGS = {
    "TITLE": "BenchHub API",
    "DESCRIPTION": (
        "Community database benchmark results: upload runs, query measurements by any "
        "environment dimension, export CSV."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # System fonts, no loading spinner: nothing fetched from outside
    # (templates/drf_spectacular/redoc.html drops the Google Fonts link).
    "REDOC_UI_SETTINGS": {
        "hideLoading": True,
        "theme": {
            "typography": {
                "fontFamily": "system-ui, sans-serif",
                "headings": {"fontFamily": "system-ui, sans-serif"},
                "code": {"fontFamily": "ui-monospace, monospace"},
            }
        },
    },
    "COMPONENT_SPLIT_REQUEST": True,
    # Tags from the path after this prefix: submissions, runs, measurements…
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # 3.1: the upload body is the submission JSON Schema (draft 2020-12),
    # embedded with the error shape by benchhub.openapi.
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "benchhub.openapi.postprocess",
    ],
}

# One JSON object per line on stderr, tokens redacted (benchhub.lib.logs);
# LOG_FORMAT=text for a person reading a terminal.
LOG_FORMAT = envchoice("LOG_FORMAT", "json", ("json", "text"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "benchhub.lib.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    # logging takes only the upper-case names, and refused any other with a
    # ValueError naming no variable ("Unable to configure root logger").
    "root": {
        "handlers": ["console"],
        "level": envchoice(
            "LOG_LEVEL", "WARNING", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
        ),
    },
}
