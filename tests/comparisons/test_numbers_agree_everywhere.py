"""Every page and endpoint that shows a value per group shows the same
median, n and range for it, and each is what a calculator gives from the
runs' own values: the comparisons API, /compare/'s table, the benchmark page
and the dimension page, on PostgreSQL and on SQLite (the embedded default,
in a process of its own), and the comparison's two paths (in PostgreSQL and
in Python) on the same rows.

The values are uneven on purpose: even counts (the median is the mean of
the two middle values), ties, and one outlier per cell, so that a mean, a
median of medians or a weighted mean where the median belongs differs."""

from __future__ import annotations

import html
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
PG16 = {"version_string": "PostgreSQL 16.2 on x86_64-pc-linux-gnu"}
XFS = {"filesystem": "XFS", "kind": "ssd"}

# (filesystem, major version) -> one {clients: value} per run.
DATASET: dict[tuple[str, str], list[dict[int, float]]] = {
    ("ext4", "15"): [
        {1: 300.0, 20: 1500.0},
        {1: 310.0, 20: 1530.0},
        {1: 310.0, 20: 9000.0},
        {1: 2900.0, 20: 1511.0},
    ],
    ("xfs", "15"): [
        {1: 95.0, 20: 700.0},
        {1: 120.0, 20: 650.0},
        {1: 95.0, 20: 655.0},
        {1: 97.0, 20: 4000.0},
        {1: 400.0, 20: 690.0},
        {1: 101.0, 20: 702.5},
    ],
    ("ext4", "16"): [
        {1: 500.0, 20: 2500.0},
        {1: 523.5, 20: 2610.0},
        {1: 9999.0, 20: 2610.0},
    ],
}
QUERY = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "filesystem",
}


def load_dataset(user) -> None:
    """The runs of DATASET, approved, uploaded by ``user``."""
    from benchhub.results.models import Submission
    from benchhub.results.services import submission_create
    from tests.factories import sweep_document

    for (filesystem, major), runs in DATASET.items():
        environment = {}
        if filesystem == "xfs":
            environment["storage"] = XFS
        if major == "16":
            environment["database"] = PG16
        for values in runs:
            document = sweep_document(values, **environment)
            if filesystem == "xfs":  # another parameter besides the point: pooled on a page
                for measurement in document["runs"][0]["measurements"]:
                    measurement["parameters"]["rows"] = 1000
            submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


CELL = re.compile(
    r'<span class="value">(?P<value>.*?)</span>\s*<span class="(?:n|sub)">'
    r"n=(?P<n>\d+)(?:, (?P<low>[^<\u2013]+)\u2013(?P<high>[^<]+))?</span>"
)


def _cells(fragment: str) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (
            re.sub(r"<[^>]+>", "", html.unescape(m["value"])),
            m["n"],
            m["low"] and html.unescape(m["low"]),
            m["high"] and html.unescape(m["high"]),
        )
        for m in CELL.finditer(fragment)
    ]


def _table(page: str, table_id: str) -> str:
    table = page[page.index(f'id="{table_id}"') :]
    return table[: table.index("</table>")]


def _row_cells(table: str) -> dict[str, list]:
    rows = {}
    for label, cells in re.findall(r'<th scope="row">(.*?)</th>(.*?)</tr>', table, re.S):
        rows[html.unescape(re.sub(r"<[^>]+>", "", label)).strip()] = _cells(cells)
    return rows


def read_numbers(client) -> dict[str, object]:
    """What the pages and the API show, as a reader sees it (JSON-ready)."""
    api = client.get("/api/v1/comparisons/", QUERY).json()
    compare = client.get("/compare/", QUERY).content.decode()
    return {
        "api": [
            [series["label"], point["x"], point["value"], point["n"], point["min"], point["max"]]
            for series in api["series"]
            for point in series["points"]
        ],
        "api_notes": api["notes"],
        "compare": _row_cells(_table(compare, "comparison-table")),
        "benchmark": _row_cells(
            _table(
                client.get("/benchmarks/select-update/").content.decode(), "spread-select-update"
            )
        ),
        "ext4": _row_cells(
            _table(client.get("/filesystems/ext4/").content.decode(), "spread-select-update")
        ),
    }


# --- the independent computation ---------------------------------------------


def shown(value: float) -> str:
    """How the pages print a figure: 6 significant digits."""
    return f"{value:.6g}"


def values_of(filesystems=None, majors=None, clients=None) -> list[float]:
    return [
        run[clients]
        for (filesystem, major), runs in DATASET.items()
        if (filesystems is None or filesystem in filesystems)
        and (majors is None or major in majors)
        for run in runs
    ]


def expected_cell(values: list[float], pooled: bool = False) -> tuple[str, str, str, str]:
    median = float(numpy.median(values))
    assert median == statistics.median(values)  # two computations, one number
    mark = "≈" if pooled else ""  # the pages' mark of a cell pooling parameters
    return (mark + shown(median), str(len(values)), shown(min(values)), shown(max(values)))


def check(numbers: dict) -> None:
    # The API, exactly.
    api = {(label, x): (value, n, low, high) for label, x, value, n, low, high in numbers["api"]}
    assert set(api) == {(fs, c) for fs in ("ext4", "xfs") for c in (1, 20)}
    for (filesystem, clients), (value, n, low, high) in api.items():
        values = values_of(filesystems={filesystem}, clients=clients)
        assert value == pytest.approx(statistics.median(values), rel=1e-12), (filesystem, clients)
        assert (n, low, high) == (len(values), min(values), max(values)), (filesystem, clients)
    assert numbers["api_notes"] == []  # runs alike in their parameters: nothing pooled

    # /compare/'s table: a row per clients, a cell per filesystem (ext4, xfs).
    for clients in (1, 20):
        assert numbers["compare"][str(clients)] == [
            expected_cell(values_of(filesystems={fs}, clients=clients)) for fs in ("ext4", "xfs")
        ], clients

    # The benchmark page: a row per engine and major version, a cell per clients.
    for major in ("15", "16"):
        assert numbers["benchmark"][f"postgresql {major}"] == [
            expected_cell(values_of(majors={major}, clients=clients), pooled=major == "15")
            for clients in (1, 20)
        ], major

    # The ext4 page: the same, of ext4's runs only.
    for major in ("15", "16"):
        assert numbers["ext4"][f"postgresql {major}"] == [
            expected_cell(values_of(filesystems={"ext4"}, majors={major}, clients=clients))
            for clients in (1, 20)
        ], major


def test_the_data_tells_a_median_from_a_mean():
    """The check below can only turn red if the dataset tells them apart."""
    for clients in (1, 20):
        for groups in ({"ext4"}, {"xfs"}):
            values = values_of(filesystems=groups, clients=clients)
            assert shown(statistics.mean(values)) != shown(statistics.median(values))


def test_every_page_and_endpoint_shows_the_median_a_calculator_gives_on_postgresql(client, bob):
    load_dataset(bob)

    check(read_numbers(client))


def test_the_comparisons_two_paths_agree_with_the_calculator(bob):
    from django.contrib.auth.models import AnonymousUser

    from benchhub.comparisons import selectors
    from benchhub.comparisons.aggregation import cells_from_rows
    from benchhub.comparisons.in_database import cells_in_postgresql
    from benchhub.comparisons.query import comparison_query_parse

    load_dataset(bob)
    query = comparison_query_parse({key: [value] for key, value in QUERY.items()})
    user = AnonymousUser()
    for cells in (
        cells_in_postgresql(selectors._measurements(user, query), query),
        cells_from_rows(query, selectors._rows(user, query)),
    ):
        assert set(cells.stats) == {(fs, c) for fs in ("ext4", "xfs") for c in (1, 20)}
        for (filesystem, clients), cell in cells.stats.items():
            values = values_of(filesystems={filesystem}, clients=clients)
            q1, q3 = numpy.percentile(values, [25, 75])  # linear: percentile_cont
            assert cell.median == pytest.approx(statistics.median(values), rel=1e-12)
            assert (cell.q1, cell.q3) == pytest.approx((q1, q3), rel=1e-12)
            assert (cell.n, cell.min, cell.max) == (len(values), min(values), max(values))


SQLITE_SCRIPT = """
import json
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.test import Client
from tests.comparisons.test_numbers_agree_everywhere import load_dataset, read_numbers

call_command("migrate", verbosity=0)
load_dataset(get_user_model().objects.create_user(username="embedded"))
print(json.dumps(read_numbers(Client())))
"""


@pytest.mark.slow
def test_every_page_and_endpoint_shows_the_median_a_calculator_gives_on_sqlite(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "BENCHHUB_VAR_DIR")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        DJANGO_SETTINGS_MODULE="benchhub.settings",
        PYTHONPATH=os.pathsep.join([str(ROOT / "agents"), str(ROOT)]),
        BENCHHUB_VAR_DIR=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "-c", SQLITE_SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    numbers = json.loads(done.stdout.strip().splitlines()[-1])
    numbers["compare"] = {
        key: [tuple(cell) for cell in cells] for key, cells in numbers["compare"].items()
    }
    for page in ("benchmark", "ext4"):
        numbers[page] = {
            key: [tuple(cell) for cell in cells] for key, cells in numbers[page].items()
        }
    check(numbers)
