"""Baseline recompute at a million measurements: the nightly full recompute and
the refresh after one approval, on the database benchmarks/compare.py fills.

    .venv/bin/python benchmarks/compare.py --measurements 1000000   # fills once
    .venv/bin/python benchmarks/aggregation.py

Prints the wall time and this process's peak RSS (the work a Celery worker does:
the same functions, in-process) for:

1. the full recompute: every key marked (``baselines_mark_all``), then refresh
   rounds of ``--batch`` keys until no mark is left;
2. one approval: a submission moved to pending and recomputed without it, then
   approved and its key marked again (what the moderation service does), and the
   refresh of that key timed alone.

Targets (issue 10): full recompute < 60 s with peak RSS < 500 MB; the update
after one approval < 100 ms of task time.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/bh_stats_bench")
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    import django

    django.setup()
    from benchhub.baselines.models import Baseline, DirtyKey
    from benchhub.baselines.refresh import baselines_mark_all, baselines_refresh, mark_keys
    from benchhub.results.models import Measurement, Submission

    print(
        f"{Measurement.objects.count():,} measurements; load average "
        f"{os.getloadavg()[0]:.2f} before (2 cores, shared with other work)"
    )
    DirtyKey.objects.all().delete()
    started = time.perf_counter()
    keys = baselines_mark_all()
    rounds = 0
    while True:
        done, remaining = baselines_refresh(limit=args.batch)
        rounds += done > 0
        if not remaining:
            break
    full = time.perf_counter() - started
    print(
        f"full recompute: {keys} keys, {Baseline.objects.count()} baselines in {full:.1f} s "
        f"({rounds} rounds of {args.batch}), peak RSS {peak_rss_mb():.0f} MB, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    submission = Submission.objects.filter(status=Submission.Status.APPROVED).order_by("-id")[0]
    fingerprints = list(submission.runs.values_list("fingerprint", flat=True))
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.PENDING)
    mark_keys(fingerprints, django.utils.timezone.now())
    baselines_refresh(limit=len(fingerprints))
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.APPROVED)
    mark_keys(fingerprints, django.utils.timezone.now())
    started = time.perf_counter()
    baselines_refresh(limit=len(fingerprints))
    one = (time.perf_counter() - started) * 1000
    key_size = Measurement.objects.filter(run__fingerprint__in=fingerprints).count()
    print(
        f"after one approval: refresh of its key ({key_size:,} measurements) {one:.0f} ms, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
