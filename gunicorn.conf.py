"""gunicorn settings for BenchHub in production (the Docker image and docker-compose.yml).

The defaults are the configuration that benchmarks/ingest.py measures: 2 worker processes
with 4 threads each (gthread), which took about twice the uploads/s of 3 sync workers
(docs/performance.md, Ingest). Each variable below overrides one setting, e.g.
GUNICORN_WORKERS=4 on a machine with more cores.

    gunicorn --config gunicorn.conf.py benchhub.wsgi:application
"""

import os
import sys

# The settings' own readers, so that a bad value stops the start naming its
# variable and value (GUNICORN_WORKERS='abc': expected a whole number), as a
# bad BENCHHUB_* does. gunicorn reads this file before it applies --chdir:
# the project is put on the path from where this file is.
_PROJECT = os.path.dirname(os.path.abspath(__file__))
if _PROJECT not in sys.path:
    sys.path.insert(0, _PROJECT)
from benchhub.lib.env import envchoice, envint, envlogfile  # noqa: E402

# Set but empty is the default, as for the numbers: gunicorn would take ""
# and listen nowhere.
bind = os.environ.get("GUNICORN_BIND") or "0.0.0.0:8000"
workers = envint("GUNICORN_WORKERS", 2, minimum=1)
worker_class = "gthread"
threads = envint("GUNICORN_THREADS", 4, minimum=1)
timeout = envint("GUNICORN_TIMEOUT", 60, minimum=0)  # 0: no timeout
graceful_timeout = 30
keepalive = 5
# The heartbeat file on tmpfs: a container's /tmp may sit on a slow overlay.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 -- gunicorn's own heartbeat files
# No access log unless asked (GUNICORN_ACCESSLOG=- for stdout): the proxy in front keeps one.
accesslog = envlogfile("GUNICORN_ACCESSLOG")
# gunicorn takes any word here and logs at info for one it does not know.
loglevel = envchoice("GUNICORN_LOGLEVEL", "info", ("debug", "info", "warning", "error", "critical"))


def post_worker_init(worker) -> None:
    """gunicorn answers a request it cannot parse (a request line over
    limit_request_line, a malformed header) before Django sees it: in the
    API's JSON error shape and with a 4xx, not its HTML page or a 501."""
    from benchhub.lib.gunicorn_errors import answer_in_json

    answer_in_json(worker)
