"""`celery -A benchhub worker …` whose work on a key takes SLOW_SECONDS
longer (a test helper): long enough for two workers that took the same key
to overlap, if the claim ever let them.

    python tests/baselines/slow_worker.py worker -Q queue …
"""

import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import django

django.setup()

from celery.__main__ import main  # noqa: E402

from benchhub.baselines import refresh  # noqa: E402

_apply = refresh._apply


def _slow_apply(fingerprint: str, limit: int) -> None:
    _apply(fingerprint, limit)
    time.sleep(float(os.environ.get("SLOW_SECONDS", "0.3")))


refresh._apply = _slow_apply

if __name__ == "__main__":
    sys.argv = ["celery", "-A", "benchhub", *sys.argv[1:]]
    sys.exit(main())
