"""The CSV export written by PostgreSQL (COPY) is the file the csv module
writes (benchhub/results/exports.py): byte for byte, on data chosen to
trip every rule of the formatting."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.results import exports, selectors
from benchhub.results.filters import MeasurementFilter
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    Metric,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)

# Floats whose repr is not PostgreSQL's text of them, and some whose is.
ODD_FLOATS = [
    0.1 + 0.2,  # 0.30000000000000004
    1e-05,  # 1e-05, where PostgreSQL's numeric (and so jsonb) writes 0.00001
    0.0001,
    2.5e-07,
    100.0,  # 100.0, PostgreSQL 100
    -0.0,
    1e15,  # 1000000000000000.0, PostgreSQL 1e+15
    1234567890123456.8,
    1e16,  # 1e+16 both
    123456789012345680.0,
    5e-324,
    -7.25,
    109.39000000000001,
    999999999999999.9,
]


def _dimension(model, **fields):
    return model.objects.create(digest=uuid.uuid4().hex, **fields)


def _run(submission: Submission, position: int, **dimensions) -> Run:
    return Run.objects.create(
        submission=submission,
        position=position,
        benchmark=Benchmark.objects.get(name="select-update"),
        benchmark_version="=1+1",  # a formula to a spreadsheet
        parameters={"rows": 100, "clients": 2.5, "locking": 'für "update", now', "z": True},
        fingerprint="-deadbeef",
        fingerprint_version=1,
        **dimensions,
    )


@pytest.fixture
def awkward(alice, bob) -> list[Run]:
    """Two approved runs of bob's on machines described in awkward text,
    and a pending one of alice's, with measurements of odd values."""
    hardware = _dimension(
        Hardware,
        cpu_vendor="@vendor",
        cpu_model='Xeon "Gold", 8 cores\nrev 2',
        cores=None,
        threads=16,
        ram_bytes=None,
        virtualization="",
    )
    plain = _dimension(Hardware, cpu_vendor="amd", cpu_model="EPYC 7B13", cores=2, threads=4)
    storage = _dimension(
        Storage,
        kind="nvme",
        device_model="Samsung 980 ™ \u2013 1 TB",
        raid="-5",  # a number, not a formula
        filesystem="ext4",
        mount_options="noatime,nodiratime",
        io_scheduler="\tmq-deadline",
    )
    os_ = _dimension(OperatingSystem, family="linux", distribution="Debian\r\nGNU", version="12")
    server = _dimension(
        DatabaseServer,
        engine="postgresql",
        version="15.8",
        version_major="15",
        version_raw="PostgreSQL 15.8",
        config_profile="+tuned",
    )
    client = _dimension(Client, protocol="unix_socket", driver="psycopg, 3", load_engine="中文 😀")
    environment = {"os": os_, "server": server, "client": client, "storage": storage}
    approved = Submission.objects.create(
        submitter=bob,
        source="agent",
        status=Submission.Status.APPROVED,
        schema_version=1,
        content_digest="0" * 64,
        document={},
    )
    pending = Submission.objects.create(
        submitter=alice,
        source="import",
        status=Submission.Status.PENDING,
        schema_version=1,
        content_digest="1" * 64,
        document={},
    )
    runs = [
        _run(approved, 0, hardware=hardware, **environment),
        _run(approved, 1, hardware=plain, **environment),
        _run(pending, 0, hardware=plain, **environment),
    ]
    throughput = Metric.objects.get(benchmark__name="select-update", name="throughput")
    latency = Metric.objects.get(benchmark__name="select-update", name="latency_mean")
    rows = []
    for index, value in enumerate(ODD_FLOATS):
        rows.append(
            Measurement(
                run=runs[index % 3],
                metric=throughput if index % 4 else latency,
                # keys that jsonb orders by length, Python by name
                parameters={"clients": index + 1, "mode": "ünï", "ab": value, "q": 'a"b,c'}
                if index % 2
                else {"clients": index + 1},
                value=value,
                samples=ODD_FLOATS[index : index + 3] if index % 3 else [],
                approximate=index % 5 == 0,
            )
        )
    # no samples at all, one sample, an integer among floats, text escapes
    rows.append(Measurement(run=runs[0], metric=throughput, value=3.0, samples=[7]))
    rows.append(
        Measurement(
            run=runs[1],
            metric=latency,
            parameters={"note": "tab\there\u007f\u2028 \\ back", "n": -12, "f": False},
            value=-1e-05,
            samples=[1, 2.0, 0.5],
        )
    )
    Measurement.objects.bulk_create(rows)
    return runs


def _python(queryset) -> bytes:
    return "".join(exports.measurement_rows(queryset)).encode()


def _copied(queryset) -> bytes:
    return b"".join(
        part if isinstance(part, bytes) else part.encode() for part in exports.copied_rows(queryset)
    )


@pytest.mark.parametrize("user", ["anonymous", "alice", "bob"])
def test_the_copy_export_is_the_python_export_byte_for_byte(awkward, user, request):
    who = AnonymousUser() if user == "anonymous" else request.getfixturevalue(user)
    queryset = selectors.measurement_list(user=who)

    copied, python = _copied(queryset), _python(queryset)

    assert copied == python
    lines = list(csv.reader(io.StringIO(python.decode())))
    # alice sees her pending run as well; every one sees bob's approved runs
    assert len(lines) - 1 == (16 if user == "alice" else 12)
    assert copied.count(b"\r\n") > len(lines)  # cells hold line breaks of their own


def test_the_copy_export_filters_as_the_python_export(awkward):
    filtered = MeasurementFilter(
        {"metric": "throughput", "param.clients": "4"},
        queryset=selectors.measurement_list(user=AnonymousUser()),
    ).qs

    copied = _copied(filtered)

    assert copied == _python(filtered)
    (header, row) = list(csv.reader(io.StringIO(copied.decode())))
    assert row[header.index("parameters")] == (
        '{"ab": 2.5e-07, "clients": 4, "mode": "\\u00fcn\\u00ef", "q": "a\\"b,c"}'
    )


def test_the_api_answers_the_copy_export(anonymous_api, awkward):
    with CaptureQueriesContext(connection) as captured:
        response = anonymous_api.get("/api/v1/measurements/export.csv", {"engine": "postgresql"})
        body = b"".join(response.streaming_content)

    assert response.status_code == 200
    assert body == _python(selectors.measurement_list(user=AnonymousUser()))
    (copy,) = [query["sql"] for query in captured.captured_queries if "COPY" in query["sql"]]
    assert '"document"' not in copy  # the stored documents are never read


def _json_lines(queryset) -> tuple[bytes, bytes]:
    copied = b"".join(
        part if isinstance(part, bytes) else part.encode()
        for part in exports.copied_rows(queryset, json_lines=True)
    )
    return copied, "".join(exports.measurement_json_lines(queryset)).encode()


@pytest.mark.parametrize("user", ["anonymous", "alice"])
def test_the_copy_json_lines_are_the_python_json_lines_byte_for_byte(awkward, user, request):
    who = AnonymousUser() if user == "anonymous" else request.getfixturevalue(user)
    queryset = selectors.measurement_list(user=who)

    copied, python = _json_lines(queryset)

    assert copied == python
    assert python.count(b"\n") == (16 if user == "alice" else 12)


def test_the_api_answers_json_lines_with_the_csv_columns(anonymous_api, awkward):
    response = anonymous_api.get("/api/v1/measurements/export.jsonl", {"metric": "throughput"})
    body = b"".join(response.streaming_content).decode()

    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    lines = [json.loads(line) for line in body.splitlines()]
    csv_lines = list(csv.reader(io.StringIO(b"".join(
        anonymous_api.get("/api/v1/measurements/export.csv", {"metric": "throughput"})
        .streaming_content
    ).decode())))  # fmt: skip
    assert [list(line) for line in lines] == [csv_lines[0]] * len(lines)
    assert [line["measurement_id"] for line in lines] == [int(row[0]) for row in csv_lines[1:]]
    assert all(line["metric"] == "throughput" for line in lines)
    by_value = {line["value"]: line for line in lines}
    assert by_value[1e-05]["samples"] == [1e-05, 0.0001, 2.5e-07]
    assert by_value[1e-05]["parameters"] == {"clients": 2, "mode": "ünï", "ab": 1e-05, "q": 'a"b,c'}
    assert by_value[3.0]["samples"] == [7]
    assert by_value[3.0]["cores"] is None
    assert by_value[3.0]["load_engine"] == "中文 😀"


def test_json_lines_refuse_paging_as_the_csv_does(anonymous_api, awkward):
    response = anonymous_api.get("/api/v1/measurements/export.jsonl", {"page_size": "10"})

    assert response.status_code == 400
    assert "export.jsonl is not paginated" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body"), [("export.csv", exports.header_line()), ("export.jsonl", "")]
)
def test_a_filter_nothing_can_match_exports_an_empty_file(anonymous_api, awkward, path, body):
    """cores=-1 is refused by the query, before any SQL (EmptyResultSet)."""
    response = anonymous_api.get(f"/api/v1/measurements/{path}", {"cores": "-1"})

    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode() == body
