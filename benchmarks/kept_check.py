"""What checking a kept comparison answer costs while a transaction is left
open (an idle session, a long export, a pg_dump) and changes keep committing.

Such a transaction holds back the xmin of every snapshot taken after it, so
every change committed since lies between an answer's xmin and xmax, and is
visible to it. The check (benchhub/comparisons/kept.py, ``_CHANGED``) must
not read those. This script holds a transaction open on the database
benchmarks/compare.py fills (whose run leaves kept answers), commits
``--changes`` change rows, stores every kept answer again under a snapshot
taken then, and times, over ``--repeat`` runs each, in one connection:

- the check of one answer (what a request does before serving it);
- the scan of every kept answer for stale ones (what the refresh does);

with the check as it is and with the check of b8dcb32 (every change row
at or above the snapshot's xmin read). The change rows it wrote are deleted
at the end; the kept answers stay, under their new snapshots. There are
copies of them up to ``--answers`` (2,000, as many as BenchHub keeps by
default) during the run, deleted at the end.

    .venv/bin/python benchmarks/kept_check.py --changes 10000 \\
        --database postgres://postgres@127.0.0.1:5432/bh_stats_bench
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The check of b8dcb32, for comparison.
BEFORE = """(
    NOT EXISTS (
        SELECT 1 FROM comparisons_keptfloor AS f
        WHERE f.cluster = (pg_control_system()).system_identifier
          AND pg_snapshot_xmin(a.snapshot) >= f.horizon
    )
    OR EXISTS (
        SELECT 1 FROM comparisons_datachange AS c
        WHERE c.xid >= pg_snapshot_xmin(a.snapshot)
          AND NOT pg_visible_in_snapshot(c.xid, a.snapshot)
    )
)"""


def timed(connection: psycopg.Connection, statement: str, repeat: int) -> float:
    """Median milliseconds of ``statement``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        connection.execute(statement).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/bh_stats_bench")
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument(
        "--answers", type=int, default=2000, help="copies of the kept answers up to this many"
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    from benchhub.comparisons.kept import _CHANGED

    held = psycopg.connect(args.database)
    held.execute("SELECT pg_current_xact_id()")  # open, with an id: xmin held back
    work = psycopg.connect(args.database, autocommit=True)
    try:
        for _ in range(args.changes):
            work.execute("INSERT INTO comparisons_datachange VALUES (pg_current_xact_id())")
        work.execute("ANALYZE comparisons_datachange")  # as autovacuum would
        # As many answers as BENCHHUB_COMPARISON_KEEP_ENTRIES keeps: copies of
        # those there are, deleted at the end.
        work.execute(
            "INSERT INTO comparisons_keptanswer"
            " (key, snapshot, metric, answer, request, served_at)"
            " SELECT 'copy ' || g || ' ' || key, snapshot, metric, answer, request, served_at"
            " FROM comparisons_keptanswer, generate_series(1, %s) AS g"
            " ORDER BY g LIMIT greatest(%s - (SELECT count(*) FROM comparisons_keptanswer), 0)",
            [args.answers, args.answers],
        )
        work.execute(
            "UPDATE comparisons_keptanswer SET snapshot = pg_current_snapshot(), created_at = now()"
        )
        (answers,) = work.execute("SELECT count(*) FROM comparisons_keptanswer").fetchone()
        if not answers:
            print("no kept answers: run benchmarks/compare.py on this database first")
            return 1
        print(f"{args.changes} changes committed since a transaction left open; {answers} answers")
        for name, changed in (("now", _CHANGED), ("of b8dcb32", BEFORE)):
            one = timed(
                work,
                "SELECT a.key FROM comparisons_keptanswer AS a WHERE a.key = "  # noqa: S608
                f"(SELECT min(key) FROM comparisons_keptanswer) AND NOT {changed}",
                args.repeat,
            )
            scan = f"SELECT a.key FROM comparisons_keptanswer AS a WHERE {changed}"  # noqa: S608
            every = timed(work, scan, args.repeat)
            print(
                f"  check {name:>15}: one answer p50 {one:.3f} ms;"
                f" every answer (the refresh's scan) p50 {every:.2f} ms"
            )
    finally:
        held.rollback()
        work.execute(
            "DELETE FROM comparisons_datachange WHERE xid >= (SELECT "
            "pg_snapshot_xmin(pg_current_snapshot()))"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
