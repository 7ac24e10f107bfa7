"""The curated seed documents say what the articles say.

Each document in benchhub/imports/articles/ is checked against the submission
schema and the benchmark catalog, and its numbers against the article it cites:
the tables of seeds 002 and 003 are parsed from the article text and compared
cell by cell, so a transcription error (or a lost or extra cell) fails here.
No database is needed.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from benchhub_contract.schema import metric_catalog, validation_errors

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTICLES_DIR = REPO_ROOT / "benchhub" / "imports" / "articles"

SQL_BENCH_DOC = "002_mysql_sql_bench_freebsd.json"
FILESYSTEMS_DOC = "003_firebird_filesystems_linux.json"
GBAK_DOC = "001_firebird_gbak_cpu_affinity.json"
SORT_DOC = "001_firebird_interbase_sort_temp.json"
SELECT_UPDATE_DOC = "004_select_update_mysql_postgresql.json"
EXPECTED_DOCUMENTS = {SQL_BENCH_DOC, FILESYSTEMS_DOC, GBAK_DOC, SORT_DOC, SELECT_UPDATE_DOC}

Document = dict[str, Any]


# ------------------------------------------------------------------ helpers


@cache
def seeds_dir() -> Path:
    """The shared seeds folder: beside the repository root (/work/shared/seeds next to
    /work/main), or wherever BENCHHUB_SEEDS_DIR points."""
    if override := os.environ.get("BENCHHUB_SEEDS_DIR"):
        # Asked for explicitly (CI does): a wrong path is an error, not a skip.
        if not (Path(override) / "README.md").is_file():
            pytest.fail(f"BENCHHUB_SEEDS_DIR={override} holds no seed articles (no README.md)")
        return Path(override)
    # parents[3] is the folder holding the repository; walking up all parents also
    # finds it from a worktree or a copy placed one level deeper.
    candidates = [parent / "shared" / "seeds" for parent in Path(__file__).resolve().parents]
    for candidate in candidates:
        if (candidate / "README.md").is_file():
            return candidate
    # A fresh clone has no seed texts beside it: the documents are still checked
    # against the schema and catalog, only the cross-check with the articles waits.
    pytest.skip(
        "seed article texts not found (no shared/seeds/ beside the repository, "
        f"{REPO_ROOT.parent / 'shared' / 'seeds'}, and BENCHHUB_SEEDS_DIR unset): "
        "the cross-check of the curated documents against them runs where they exist"
    )


@cache
def article_text(file_name: str) -> str:
    path = seeds_dir() / file_name
    if not path.is_file():
        pytest.fail(f"Seed article {file_name} is missing from {seeds_dir()}")
    return path.read_text(encoding="utf-8")


@cache
def load(name: str) -> Document:
    return json.loads((ARTICLES_DIR / name).read_text(encoding="utf-8"))


def document_names() -> list[str]:
    return sorted(path.name for path in ARTICLES_DIR.glob("*.json"))


def effective_environment(document: Document, run: Document) -> Document:
    """A run's environment: each section it gives replaces the document's section."""
    return {**document.get("environment", {}), **run.get("environment", {})}


def measurements(document: Document) -> Iterator[tuple[Document, Document]]:
    for run in document["runs"]:
        for measurement in run["measurements"]:
            yield run, measurement


def seconds(minutes: str, secs: str) -> int:
    return int(minutes) * 60 + int(secs)


def one(pattern: str, text: str) -> re.Match[str]:
    found = list(re.finditer(pattern, text))
    assert len(found) == 1, f"expected the article to state {pattern!r} once, found {len(found)}"
    return found[0]


# ------------------------------------------------------- every document


def test_the_articles_folder_holds_the_expected_documents() -> None:
    assert set(document_names()) == EXPECTED_DOCUMENTS


def test_the_readme_describes_every_document() -> None:
    readme = (ARTICLES_DIR / "README.md").read_text(encoding="utf-8")
    for name in document_names():
        assert name in readme


@pytest.mark.parametrize("name", document_names())
def test_document_is_valid_against_the_schema(name: str) -> None:
    errors = validation_errors(load(name))
    assert [e.as_dict() for e in errors] == []


@pytest.mark.parametrize("name", document_names())
def test_every_metric_and_unit_is_the_catalogs(name: str) -> None:
    catalog = metric_catalog()
    for run, measurement in measurements(load(name)):
        metrics = catalog.get(run["benchmark"])
        assert metrics is not None, f"benchmark {run['benchmark']} is not in the catalog"
        assert measurement["metric"] in metrics, (run["benchmark"], measurement["metric"])
        assert measurement["unit"] == metrics[measurement["metric"]]["unit"]


@pytest.mark.parametrize("name", document_names())
def test_document_is_curated_and_cites_its_seed_article(name: str) -> None:
    source = load(name)["source"]
    assert source["kind"] == "curated"
    citation = source["citation"]
    assert name[:3] == citation["file"][:3], "a document's name starts with its seed's number"
    text = article_text(citation["file"])
    assert citation["title"] in text, "the cited title is the article's own"
    assert "Transcribed from the article" in source["note"]


def test_uuids_are_fixed_distinct_version_4() -> None:
    ids = [load(name)["uuid"] for name in document_names()]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(value).version == 4 for value in ids)


@pytest.mark.parametrize("name", document_names())
def test_quotes_in_notes_are_verbatim_and_approximations_are_quoted(name: str) -> None:
    """A figure read from a sentence carries that sentence, so a reader can check it."""
    document = load(name)
    text = " ".join(article_text(document["source"]["citation"]["file"]).split())
    for _, measurement in measurements(document):
        quotes = re.findall(r"«(.+?)»", measurement.get("note", ""))
        if measurement.get("approximate"):
            assert quotes, f"approximate value {measurement['value']} has no quoted source"
        for quote in quotes:
            assert " ".join(quote.split()) in text, f"not in the article: {quote!r}"


# ------------------------------------------------- seed 002: sql-bench

# The article's columns: 4 my.cnf profiles x UFS/ZFS, and UFS with softupdates
# added for my-innodb-heavy-4G.cnf only, as its text says.
SQL_BENCH_PROFILES = {
    "small": "my-small.cnf",
    "huge": "my-huge.cnf",
    "innodb": "my-innodb-heavy-4G.cnf",
    "hybrid": "hybrid of my-huge.cnf + my-innodb-heavy-4G.cnf",
}
SQL_BENCH_COLUMNS = [
    ("small", "ufs"),
    ("small", "zfs"),
    ("huge", "ufs"),
    ("huge", "zfs"),
    ("innodb", "ufs"),
    ("innodb", "ufs+su"),
    ("innodb", "zfs"),
    ("hybrid", "ufs"),
    ("hybrid", "zfs"),
]

SqlBenchRow = tuple[str, int, list[str]]


def parse_sql_bench_table(text: str) -> tuple[list[str], list[str], list[SqlBenchRow]]:
    """(profile groups, filesystem sub-header, rows of (operation, iterations, cells))."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Операция |"))
    groups = [cell.strip() for cell in lines[header - 1].split("|") if cell.strip()]
    sub_header = [cell.strip() for cell in lines[header].split("|")][2:-1]
    rows = []
    for line in lines[header + 1 :]:
        if "|" not in line:
            break
        cells = [cell.strip() for cell in line.split("|")]
        assert cells[-1] == "", f"row does not end with '|': {line!r}"
        operation, iterations, values = cells[0], int(cells[1]), cells[2:-1]
        assert len(values) == len(sub_header), f"{operation}: {len(values)} cells"
        rows.append((operation, iterations, values))
    return groups, sub_header, rows


def sql_bench_column_key(environment: Document) -> tuple[str, str]:
    storage, database = environment["storage"], environment["database"]
    filesystem = storage["filesystem"]
    if "softupdates" in storage.get("mount_options", []):
        filesystem += "+su"
    return database["config_profile"], filesystem


def test_sql_bench_table_matches_the_article_cell_by_cell() -> None:
    document = load(SQL_BENCH_DOC)
    groups, sub_header, rows = parse_sql_bench_table(
        article_text(document["source"]["citation"]["file"])
    )
    assert groups == list(SQL_BENCH_PROFILES)
    assert sub_header == [filesystem for _, filesystem in SQL_BENCH_COLUMNS]
    assert rows[0][0] == "TOTALS", "the article puts TOTALS on top"
    assert len(rows) == 46, "45 operations and TOTALS"

    runs = {}
    for run in document["runs"]:
        assert run["benchmark"] == "sql-bench"
        environment = effective_environment(document, run)
        assert environment["database"]["version_string"] == "MySQL 5.1.41"
        key = sql_bench_column_key(environment)
        assert key not in runs, f"two runs for column {key}"
        runs[key] = {m["parameters"]["operation"]: m for m in run["measurements"]}
    expected_keys = {(SQL_BENCH_PROFILES[g], fs) for g, fs in SQL_BENCH_COLUMNS}
    assert set(runs) == expected_keys

    cells = 0
    for column, (group, filesystem) in enumerate(SQL_BENCH_COLUMNS):
        run = runs[SQL_BENCH_PROFILES[group], filesystem]
        printed = {operation: (n, values[column]) for operation, n, values in rows}
        for operation, (iterations, cell) in printed.items():
            where = f"{operation} / {group} {filesystem}"
            if not cell:
                assert operation not in run, f"{where}: blank in the article, but recorded"
                continue
            cells += 1
            assert operation in run, f"{where}: missing"
            measurement = run[operation]
            assert measurement["metric"] == "seconds"
            assert measurement["parameters"] == {"operation": operation, "iterations": iterations}
            assert measurement["value"] == float(cell), f"{where}: article says {cell}"
            assert not measurement.get("approximate", False)
        assert set(run) <= set(printed), f"{group} {filesystem}: operations not in the article"

    assert cells == 413, "45 operations + TOTALS in 9 columns, one cell blank (select_join)"
    assert sum(len(run["measurements"]) for run in document["runs"]) == cells


# ------------------------------------------- seed 003: filesystems, relative

# What each table holds, from its caption and the paragraph around it. Tables 1
# and 2 print one unlabelled row; it is filed as the TPC-B/TPC-C average (see
# the README). Table 4 is TPC-B only ("Effectuons de nouveau le test TPC-B").
FS_CAPTIONS = {
    1: "options aync, atime et ordonnanceur par défaut",
    2: "options sync, noatime et ordonnanceur par défaut",
    3: "options sync, noatime et ordonnanceur deadline",
    4: "options sync, noatime",
}
FS_MOUNT_OPTIONS = {1: {"async", "atime"}, 2: {"sync", "noatime"}, 3: {"sync", "noatime"}}
FS_MOUNT_OPTIONS[4] = FS_MOUNT_OPTIONS[3]
FS_MACHINE = {1: "Mandriva", 2: "Mandriva", 3: "Mandriva", 4: "CentOS"}
FS_DEFAULT_SCHEDULER = {1: "cfq", 2: "cfq", 3: "deadline"}
FS_ROW_BENCHMARK = {None: "tpc-average", "TPC-B": "tpcb", "TPC-C": "tpcc", "Moyenne": "tpc-average"}
FS_METRIC = {"tpcb": "tps_relative", "tpcc": "tpm_relative", "tpc-average": "score_relative"}

FsCell = tuple[int, str | None, str, str]  # table, row label, column, printed value


def parse_filesystem_tables(text: str) -> dict[int, tuple[str, list[FsCell]]]:
    """table number → (caption, cells). A table is the block of lines above its caption."""
    lines = text.splitlines()
    tables: dict[int, tuple[str, list[FsCell]]] = {}
    for index, line in enumerate(lines):
        caption = re.match(r"^Table (\d): (.+)$", line.strip())
        if not caption:
            continue
        start = index
        while start > 0 and lines[start - 1].strip():
            start -= 1
        header, *body = [ln.replace("raw (CFQ)", "raw").split() for ln in lines[start:index]]
        if header[0] != "raw":
            header = header[1:]  # the row-label column ("ordonnanceur")
        number, cells = int(caption.group(1)), []
        for tokens in body:
            label = None if re.fullmatch(r"[\d.]+", tokens[0]) else tokens[0]
            values = tokens if label is None else tokens[1:]
            assert len(values) == len(header), f"Table {number}, row {label}: {tokens}"
            cells += [
                (number, label, column, value) for column, value in zip(header, values, strict=True)
            ]
        tables[number] = (caption.group(2).strip(), cells)
    return tables


def filesystem_run_key(document: Document, run: Document) -> tuple[Any, ...]:
    environment = effective_environment(document, run)
    storage = environment["storage"]
    return (
        run["benchmark"],
        environment["os"]["distribution"],
        storage["filesystem"],
        frozenset(storage.get("mount_options", [])),
        storage["io_scheduler"],
    )


def filesystem_cell_key(table: int, label: str | None, column: str) -> tuple[Any, ...]:
    benchmark = "tpcb" if table == 4 else FS_ROW_BENCHMARK[label]
    if column == "raw":  # the reference: no filesystem, no mount, the default CFQ
        return benchmark, FS_MACHINE[table], "raw", frozenset(), "cfq"
    scheduler = label if table == 4 else FS_DEFAULT_SCHEDULER[table]
    return (
        benchmark,
        FS_MACHINE[table],
        column.lower(),
        frozenset(FS_MOUNT_OPTIONS[table]),
        scheduler,
    )


def test_filesystem_tables_match_the_article_cell_by_cell() -> None:
    document = load(FILESYSTEMS_DOC)
    tables = parse_filesystem_tables(article_text(document["source"]["citation"]["file"]))
    assert {n: caption for n, (caption, _) in tables.items()} == FS_CAPTIONS
    cells = [cell for _, table_cells in tables.values() for cell in table_cells]
    assert len(cells) == 6 + 6 + 18 + 8

    runs: dict[tuple[Any, ...], Document] = {}
    for run in document["runs"]:
        key = filesystem_run_key(document, run)
        assert key not in runs, f"two runs for {key}"
        assert run["parameters"] == {"reference": "raw device"}
        assert len(run["measurements"]) == 1
        runs[key] = run

    matched_by_filesystem_cells: list[tuple[Any, ...]] = []
    for table, label, column, printed in cells:
        where = f"Table {table}, row {label or '-'}, column {column}"
        key = filesystem_cell_key(table, label, column)
        assert key in runs, f"{where}: no run for {key}"
        measurement = runs[key]["measurements"][0]
        assert measurement["metric"] == FS_METRIC[key[0]]
        assert measurement["value"] == float(printed), f"{where}: article says {printed}"
        assert not measurement.get("approximate", False)
        if column == "raw":
            assert float(printed) == 100
        else:
            matched_by_filesystem_cells.append(key)

    # Each filesystem cell is its own run; the 7 raw = 100 cells share 4 reference
    # runs (one per benchmark and machine); nothing else is in the document.
    assert len(set(matched_by_filesystem_cells)) == len(matched_by_filesystem_cells) == 31
    references = {k for k in runs if k[2] == "raw"}
    assert len(references) == 4
    assert set(runs) == set(matched_by_filesystem_cells) | references


# ------------------------------------------------------ seed 001: gbak, sort


def test_gbak_timings_are_the_articles() -> None:
    document = load(GBAK_DOC)
    text = article_text(document["source"]["citation"]["file"])
    same = one(r"on the same core - (\d+) min (\d+) sec", text)
    other = one(r"on different cores - (\d+) min (\d+) sec", text)
    tcp = one(r"backup takes (\d+):(\d+) minutes", text)
    expected = {
        ("local", "same_core"): seconds(*same.groups()),
        ("local", "other_core"): seconds(*other.groups()),
        ("tcp_loopback", "unpinned"): seconds(*tcp.groups()),
    }
    assert expected == {
        ("local", "same_core"): 562,
        ("local", "other_core"): 941,
        ("tcp_loopback", "unpinned"): 250,
    }
    found = {}
    for run, measurement in measurements(document):
        client = effective_environment(document, run)["client"]
        assert run["benchmark"] == "backup"
        assert measurement["metric"] == "seconds"
        assert measurement["parameters"] == {"protocol": client["protocol"]}
        found[client["protocol"], client["cpu_placement"]] = measurement["value"]
    assert found == expected


def test_sort_figures_are_the_articles() -> None:
    document = load(SORT_DOC)
    text = article_text(document["source"]["citation"]["file"])
    firebird = seconds(*one(r"uncompressed TEMP \((\d+) min (\d+) sec\)", text).groups())
    interbase = one(r"\((\d+) min (\d+) sec vs (\d+) min (\d+) sec\)", text).groups()
    temp_gb = float(one(r"temp file with the size of ([\d.]+)GB", text).group(1))
    rows = int(one(r"sorting (\d+) million records", text).group(1)) * 1_000_000

    found = {}
    for run, measurement in measurements(document):
        engine = effective_environment(document, run)["database"]["engine"]
        assert run["benchmark"] == "external-sort"
        assert run["parameters"]["rows"] == rows
        found[engine, run["parameters"]["temp_compressed"], measurement["metric"]] = measurement[
            "value"
        ]
    assert found == {
        ("firebird", False, "seconds"): firebird,
        ("firebird", True, "seconds"): firebird,
        ("interbase", False, "seconds"): seconds(*interbase[:2]),
        ("interbase", True, "seconds"): seconds(*interbase[2:]),
        ("firebird", False, "temp_bytes_written"): round(temp_gb * 2**30),
    }


# --------------------------------------- seed 004: approximate points only


def test_select_update_points_are_approximate_and_the_articles() -> None:
    document = load(SELECT_UPDATE_DOC)
    text = article_text(document["source"]["citation"]["file"])
    mysql_tps = int(one(r"毎秒(\d+)トランザクションくらい", text).group(1))
    mysql_clients = int(one(r"同時アクセス数が(\d+)くらいで頭打ち", text).group(1))
    pg_tps = int(one(r"毎秒(\d+)トランザクション弱", text).group(1))
    pg_clients = int(one(r"同時アクセス数が(\d+)を超えた", text).group(1))

    found = {}
    for run, measurement in measurements(document):
        environment = effective_environment(document, run)
        assert environment["os"]["family"] == "linux", "the text gives no Windows figure"
        assert measurement["approximate"] is True
        assert measurement["metric"] == "throughput"
        engine = environment["database"]["engine"]
        found[engine] = (measurement["parameters"]["clients_from"], measurement["value"])
    assert found == {"mysql": (mysql_clients, mysql_tps), "postgresql": (pg_clients, pg_tps)}
