"""Write the API's answers (JSON and CSV) to many comparisons into a folder,
to check that a change to the comparisons keeps every answer byte for byte.

Run it in the tree before a change and in the tree after, against the same
database that benchmarks/compare.py fills, then compare the two folders:

    .venv/bin/python benchmarks/comparison_answers.py --out /tmp/answers-before
    (the change)
    .venv/bin/python benchmarks/comparison_answers.py --out /tmp/answers-after
    diff -r /tmp/answers-before /tmp/answers-after && echo identical

The comparisons: compare.py's three cases and nine more that reach a
reference, quiet verdicts, a minimum effect, small cells (bootstraps from
repetitions) and an axis that is a run field.

Every answer is computed (none kept). They come from the measurement packs
(benchhub/comparisons/packs.py: each query's metric has them built first where
they are out of date); ``--rows`` computes them from the rows instead, so

    .venv/bin/python benchmarks/comparison_answers.py --out /tmp/answers-packs
    .venv/bin/python benchmarks/comparison_answers.py --rows --out /tmp/answers-rows
    diff -r /tmp/answers-packs /tmp/answers-rows && echo identical

holds the packs to the rows' answers, byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # this folder's own module, found through the path above

SELECT_UPDATE = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
SQL_BENCH = {"benchmark": "sql-bench", "metric": "seconds", "x": "param.operation"}
QUERIES = [
    *compare.CASES.values(),
    {**SELECT_UPDATE, "series": "filesystem", "reference": "ext4"},
    {**SELECT_UPDATE, "series": "engine", "verdicts": "quiet"},
    {
        **SELECT_UPDATE,
        "series": "cpu_model",
        "engine": "postgresql",
        "version_major": "15",
        "filesystem": "xfs",
    },
    {
        **SELECT_UPDATE,
        "series": "filesystem",
        "cpu_model": "CPU model 3",
        "version_major": "16",
        "mount_options": "noatime",
    },
    {
        **SELECT_UPDATE,
        "series": "version_major",
        "cpu_model": "CPU model 1",
        "filesystem": "zfs",
        "minimum_effect": "1",
    },
    {**SQL_BENCH, "series": "filesystem", "reference": "xfs", "config_profile": "default"},
    {**SQL_BENCH, "series": "engine", "cpu_model": "CPU model 2", "filesystem": "btrfs"},
    {
        **SQL_BENCH,
        "series": "version_major",
        "cpu_model": "CPU model 5",
        "filesystem": "jfs",
        "engine": "mariadb",
    },
    {
        "benchmark": "select-update",
        "metric": "latency_p95",
        "x": "filesystem",
        "series": "engine",
        # fixed: a comparison refuses to pool the clients levels in one median (a 400)
        "param.clients": "16",
    },
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/bh_stats_bench")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the answers to")
    parser.add_argument("--rows", action="store_true", help="from the rows, not the packs")
    args = parser.parse_args()
    if not compare.exists(args.database):
        print(f"{args.database} does not exist: fill it with benchmarks/compare.py first")
        return 2
    compare.setup_django(args.database)
    from django.conf import settings
    from django.test import Client

    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0  # each answer computed
    settings.BENCHHUB_COMPARISON_PACKS = not args.rows
    if not args.rows:
        compare.packs_ready(QUERIES)
    args.out.mkdir(parents=True, exist_ok=True)
    client = Client()
    failed = 0
    with compare.packs_counted() as packed:
        for number, query in enumerate(QUERIES):
            for answer_format in ("json", "csv"):
                response = client.get("/api/v1/comparisons/", {**query, "format": answer_format})
                path = args.out / f"{number:02d}.{answer_format}"
                path.write_bytes(response.content)
                digest = hashlib.sha256(response.content).hexdigest()[:12]
                size = len(response.content)
                print(f"{path.name}  {response.status_code}  {size:7,} bytes  {digest}")
                failed += response.status_code != 200
    asked = 2 * len(QUERIES)
    print(f"packs answered {len(packed)} of {asked}" if not args.rows else f"rows answered {asked}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
