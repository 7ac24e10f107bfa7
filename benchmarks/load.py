"""Load: 100 concurrent uploaders for 60 s against gunicorn + PostgreSQL, a Celery worker
consuming the baseline refreshes from Redis (issue 11, "Proof: Load").

benchmarks/ingest.py does the work, with these defaults instead of its own: 100 client
threads, 60 s measured after 5 s of warm-up, a real Celery worker (``--tasks worker``), the
gunicorn configuration production runs (gunicorn.conf.py: 2 processes x 4 gthread threads),
its own scratch database (bh_deploy_load, dropped and created, dropped at the end) and its
own Redis database (db 2), and ``--strict``: any answer other than 201 is an error. It prints
uploads/s and p99, and checks that the database holds exactly one submission (with its run
and measurements) per 201 answer. Loopback only; stops by itself after about 75 s.

    .venv/bin/python benchmarks/load.py
    .venv/bin/python benchmarks/load.py --clients 200 --duration 120

Exit status 0 when there was no error and the stored rows match the 201 answers. Any option
of ingest.py can be given (``--help``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ingest


def main() -> int:
    parser = ingest.build_parser(description=__doc__.split("\n\n")[0])
    parser.set_defaults(
        clients=100,
        duration=60,
        warmup=5,
        tasks="worker",
        db_name="bh_deploy_load",
        redis_url="redis://127.0.0.1:6379/2",
        timeout=60,
        strict=True,
    )
    return ingest.run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
