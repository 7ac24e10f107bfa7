"""Baselines at a million measurements: the nightly full recompute and the
incremental update after one approval, on the database benchmarks/compare.py fills.

    .venv/bin/python benchmarks/compare.py --measurements 1000000 --refill \\
        --database postgres://postgres@127.0.0.1:5432/bh_baselines_bench   # fills once
    .venv/bin/python benchmarks/aggregation.py \\
        --database postgres://postgres@127.0.0.1:5432/bh_baselines_bench

Prints the wall time and this process's peak RSS (the work a Celery worker does:
the same functions, in-process) for:

1. the full recompute: every key marked for a rebuild (``baselines_mark_all``),
   then refresh rounds of ``--batch`` keys until no mark is left; twice: first
   on the filled data, as after an import (every score is written), then
   again, as the nightly task finds it (scores in place, few change);
2. one rejection and one approval, through the moderation service, on a
   submission of the largest key: the refresh of each timed alone (the task's
   work: claim, apply the run's values to the buckets, summarize the changed
   baselines, score the run, release), ``--repeat`` times; then the numbers are
   checked against a rebuild of that key.

Targets (issue 10): full recompute < 60 s with peak RSS < 500 MB; the update
after one approval < 100 ms of task time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--database", default="postgres://postgres@127.0.0.1:5432/bh_baselines_bench"
    )
    parser.add_argument("--batch", type=int, default=1, help="keys per refresh round")
    parser.add_argument("--repeat", type=int, default=5, help="rejection/approval pairs timed")
    parser.add_argument(
        "--skip-full", action="store_true", help="only the incremental update (keys rebuilt)"
    )
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = args.database
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    import django

    django.setup()
    from django.db.models import Count

    from benchhub.baselines import services

    # This process plays the worker: the moderation service's queued refresh
    # (in-process without a broker) is left to the timed calls below.
    services._queue_refresh = lambda: None
    from benchhub.baselines.marking import baselines_mark_all
    from benchhub.baselines.models import Baseline, BaselineBucket, DirtyKey, DirtyRun
    from benchhub.baselines.refresh import baselines_refresh
    from benchhub.moderation.services import submission_moderate
    from benchhub.results.models import Measurement, Run, Submission

    print(
        f"{Measurement.objects.count():,} measurements; load average "
        f"{os.getloadavg()[0]:.2f} before (2 cores)"
    )
    if not args.skip_full:
        # First as after an import (no score yet: every one is written),
        # then as the nightly task finds a key (scores in place).
        for label in ("full recompute", "full recompute again (nightly)"):
            DirtyKey.objects.all().delete()
            DirtyRun.objects.all().delete()
            unscored = Measurement.objects.filter(outlier_score__isnull=True).count()
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
                f"{label}: {keys} keys, {Baseline.objects.count():,} baselines, "
                f"{BaselineBucket.objects.count():,} buckets in {full:.1f} s ({rounds} rounds of "
                f"{args.batch}; {unscored:,} measurements unscored before), "
                f"peak RSS {peak_rss_mb():.0f} MB, load average {os.getloadavg()[0]:.2f}"
            )
    else:
        assert not DirtyKey.objects.filter(rebuild_at__isnull=False).exists(), "rebuild first"

    largest = (
        Run.objects.values("fingerprint")
        .annotate(m=Count("measurements"))
        .order_by("-m")
        .values_list("fingerprint", "m")[0]
    )
    fingerprint, key_size = largest
    submission = (
        Submission.objects.filter(status=Submission.Status.APPROVED, runs__fingerprint=fingerprint)
        .order_by("-id")
        .first()
    )
    buckets = BaselineBucket.objects.filter(baseline__fingerprint=fingerprint).count()
    print(
        f"largest key: {key_size:,} measurements, "
        f"{Baseline.objects.filter(fingerprint=fingerprint).count()} baselines, "
        f"{buckets:,} buckets; submission {submission.pk} "
        f"({Measurement.objects.filter(run__submission=submission).count()} measurements)"
    )
    baselines_refresh()  # nothing left behind
    timings: dict[str, list[float]] = {"flag": [], "approve": []}
    for _ in range(args.repeat):
        for action in ("flag", "approve"):
            submission_moderate(
                submission=submission, actor=None, action=action, reason="benchmark"
            )
            started = time.perf_counter()
            done, remaining = baselines_refresh(limit=1)
            timings[action].append((time.perf_counter() - started) * 1000)
            assert (done, remaining) == (1, 0), (done, remaining)
    for action, label in (("flag", "rejection (flag)"), ("approve", "approval")):
        values = timings[action]
        print(
            f"after one {label}: task time median {statistics.median(values):.1f} ms, "
            f"max {max(values):.1f} ms over {len(values)}"
        )

    kept = sorted(
        Baseline.objects.filter(fingerprint=fingerprint).values_list(
            "metric_id", "point", "n", "median", "q1", "q3", "minimum", "maximum", "mad"
        )
    )
    from benchhub.baselines.marking import mark_keys

    mark_keys([fingerprint], django.utils.timezone.now(), rebuild=True)
    started = time.perf_counter()
    baselines_refresh(limit=1)
    rebuild = (time.perf_counter() - started) * 1000
    again = sorted(
        Baseline.objects.filter(fingerprint=fingerprint).values_list(
            "metric_id", "point", "n", "median", "q1", "q3", "minimum", "maximum", "mad"
        )
    )
    print(
        f"rebuild of that key: {rebuild:.0f} ms; same numbers as the incremental path: "
        f"{'yes' if again == kept else 'NO'}; peak RSS {peak_rss_mb():.0f} MB, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0 if again == kept else 1


if __name__ == "__main__":
    sys.exit(main())
