"""gunicorn settings for BenchHub in production (the Docker image and docker-compose.yml).

The defaults are the configuration that benchmarks/ingest.py measures: 2 worker processes
with 4 threads each (gthread), which took about twice the uploads/s of 3 sync workers
(docs/performance.md, Ingest). Each variable below overrides one setting, e.g.
GUNICORN_WORKERS=4 on a machine with more cores.

    gunicorn --config gunicorn.conf.py benchhub.wsgi:application
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# The heartbeat file on tmpfs: a container's /tmp may sit on a slow overlay.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 -- gunicorn's own heartbeat files
# No access log unless asked (GUNICORN_ACCESSLOG=- for stdout): the proxy in front keeps one.
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
