import csv
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import EMPTY_ABLE, sweep_document, without

URL = "/api/v1/comparisons/"
THROUGHPUT = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
XFS = {"filesystem": "xfs", "kind": "ssd"}
MARIADB = {"version_string": "10.11.19-MariaDB-0+deb12u1"}


def store(user, document, status=Submission.Status.APPROVED) -> Submission:
    return submission_create(submitter=user, document=document, status=status).submission


def points(body: dict, label: str | None = None) -> dict:
    series = body["series"] if label is None else [s for s in body["series"] if s["label"] == label]
    assert len(series) == 1, [s["label"] for s in body["series"]]
    # The verdicts have their own tests (test_verdicts.py).
    return {
        point["x"]: {key: value for key, value in point.items() if key != "verdict"}
        for point in series[0]["points"]
    }


def test_a_point_is_the_median_n_min_and_max_of_its_measurements(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0, 2: 10.0}))
    store(bob, sweep_document({1: 300.0, 2: 20.0}))
    store(bob, sweep_document({1: 200.0}))

    response = anonymous_api.get(URL, THROUGHPUT)

    assert response.status_code == 200
    body = response.json()
    assert body["benchmark"] == "select-update"
    assert body["metric"] == {"name": "throughput", "unit": "tx/s", "direction": "higher"}
    assert body["x"] == "param.clients"
    assert body["series_by"] is None
    assert body["x_values"] == [1, 2]
    assert points(body) == {
        1: {"x": 1, "value": 200.0, "n": 3, "min": 100.0, "max": 300.0, "relative": None},
        2: {"x": 2, "value": 15.0, "n": 2, "min": 10.0, "max": 20.0, "relative": None},
    }
    assert body["series"][0]["label"] == "throughput"
    assert body["notes"] == []


def test_numeric_x_values_are_in_numeric_order_and_drawn_as_lines(anonymous_api, bob):
    store(bob, sweep_document({100: 1.0, 2: 2.0, 10: 3.0, 1: 4.0, 4: 5.0}))
    # A parameter stored as text is the same point, as the filters treat it.
    store(bob, sweep_document({"10": 5.0}))

    body = anonymous_api.get(URL, THROUGHPUT).json()

    assert body["x_values"] == [1, 2, 4, 10, 100]
    assert body["x_numeric"] is True
    assert points(body)[10]["n"] == 2


def test_text_values_are_in_natural_order_and_drawn_as_bars(anonymous_api, bob):
    values = {"select_10": 1.0, "select_2": 2.0, "Alter": 3.0, "insert": 4.0}
    store(bob, sweep_document(values, parameter="operation"))

    body = anonymous_api.get(URL, {**THROUGHPUT, "x": "param.operation"}).json()

    assert body["x_values"] == ["Alter", "insert", "select_2", "select_10"]
    assert body["x_numeric"] is False


def test_series_split_the_points_and_follow_the_same_order(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0, 2: 200.0}))
    store(bob, sweep_document({1: 50.0}, database=MARIADB, storage=XFS))

    body = anonymous_api.get(URL, {**THROUGHPUT, "series": "engine"}).json()

    assert body["series_by"] == "engine"
    assert [s["label"] for s in body["series"]] == ["mariadb", "postgresql"]
    assert points(body, "mariadb") == {
        1: {"x": 1, "value": 50.0, "n": 1, "min": 50.0, "max": 50.0, "relative": None}
    }
    assert set(points(body, "postgresql")) == {1, 2}


def test_the_reference_is_100_and_every_series_is_relative_to_it(anonymous_api, bob):
    store(bob, sweep_document({1: 200.0, 2: 400.0}))  # ext4
    store(bob, sweep_document({1: 300.0, 2: 100.0, 4: 50.0}, storage=XFS))

    response = anonymous_api.get(URL, {**THROUGHPUT, "series": "filesystem", "reference": "EXT4"})

    body = response.json()
    assert response.status_code == 200
    assert body["reference"] == "ext4"  # normalized like the filesystem filter
    assert [s["label"] for s in body["series"]] == ["ext4", "xfs"]  # the reference first
    assert {x: p["relative"] for x, p in points(body, "ext4").items()} == {1: 100.0, 2: 100.0}
    xfs = points(body, "xfs")
    assert {x: p["relative"] for x, p in xfs.items()} == {1: 150.0, 2: 25.0, 4: None}
    assert xfs[4]["value"] == 50.0
    assert any("ext4 has no value" in note and "clients = 4" in note for note in body["notes"])


def test_relative_values_are_rounded_alike_in_json_csv_and_the_page(anonymous_api, bob, client):
    # 109.39 / 100 * 100 is 109.39000000000001 in floats; 109.44 / 105.16 * 100
    # is 104.06998858881704, which the page's table shows as 104.07.
    assert 109.39 / 100.0 * 100 != 109.39
    store(bob, sweep_document({1: 100.0, 2: 105.16}))  # ext4
    store(bob, sweep_document({1: 109.39, 2: 109.44}, storage=XFS))
    query = {**THROUGHPUT, "series": "filesystem", "reference": "ext4"}

    body = anonymous_api.get(URL, query).json()
    csv_text = anonymous_api.get(URL, {**query, "format": "csv"}).content.decode()
    page = client.get("/compare/", query).content.decode()

    assert {x: p["relative"] for x, p in points(body, "xfs").items()} == {1: 109.39, 2: 104.07}
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [row["relative"] for row in rows if row["series"] == "xfs"] == ["109.39", "104.07"]
    assert '<span class="value">109.39</span>' in page
    assert '<span class="value">104.07</span>' in page


def test_a_median_of_two_values_has_no_float_noise_and_a_measured_one_every_digit(
    anonymous_api, bob
):
    # The mean of the two middle values: 4.074355000000001 in floats, both in
    # Python and in PostgreSQL's percentile_cont; 0.15000000000000002 likewise.
    assert (4.07435 + 4.07436) / 2 != 4.074355
    store(bob, sweep_document({1: 4.07435, 2: 0.1, 4: 9.000000000000002}))
    store(bob, sweep_document({1: 4.07436, 2: 0.2}))
    # A median that is one measurement keeps every digit, even one ulp from a
    # shorter decimal (9.000000000000002 is 9.0's neighbour), as the run shows it.
    assert float(f"{9.000000000000002:.15g}") == 9.0

    body = anonymous_api.get(URL, THROUGHPUT).json()
    csv_text = anonymous_api.get(URL, {**THROUGHPUT, "format": "csv"}).content.decode()

    assert {x: p["value"] for x, p in points(body).items()} == {
        1: 4.074355,
        2: 0.15,
        4: 9.000000000000002,
    }
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [row["value"] for row in rows] == ["4.074355", "0.15", "9.000000000000002"]


def test_results_pending_for_another_user_are_not_counted_own_are(
    anonymous_api, bob_api, alice_api, alice, bob
):
    store(bob, sweep_document({1: 100.0}))
    store(alice, sweep_document({1: 1000.0}), status=Submission.Status.PENDING)
    carol = User.objects.create_user(username="carol")
    store(carol, sweep_document({1: 5000.0}), status=Submission.Status.REJECTED)

    def cell(api):
        return points(api.get(URL, THROUGHPUT).json())[1]

    assert cell(anonymous_api)["n"] == 1
    assert cell(bob_api)["n"] == 1
    alices = cell(alice_api)
    assert (alices["n"], alices["min"], alices["max"]) == (2, 100.0, 1000.0)


def test_a_submitter_is_told_which_of_the_numbers_only_they_see(
    anonymous_api, bob_api, alice_api, alice, bob, client
):
    """Alice's pending run was in her comparison like any other, and the
    link she shared showed the others a different chart, or none."""
    store(bob, sweep_document({1: 100.0}))
    store(alice, sweep_document({1: 1000.0, 2: 1100.0}), status=Submission.Status.PENDING)
    note = "2 of these measurements are your own and not public yet"

    assert any(n.startswith(note) for n in alice_api.get(URL, THROUGHPUT).json()["notes"])
    client.force_login(alice)
    assert note in client.get("/compare/", THROUGHPUT).content.decode()
    for api in (anonymous_api, bob_api):
        assert not any("your own" in n for n in api.get(URL, THROUGHPUT).json()["notes"])


def test_fixed_filters_work_as_on_the_measurement_api(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0, 2: 200.0}))  # ext4, PostgreSQL 15
    store(bob, sweep_document({1: 900.0}, storage=XFS))

    query = {**THROUGHPUT, "filesystem": "EXT4", "version_min": "15", "param.clients": "1"}
    body = anonymous_api.get(URL, query).json()

    assert points(body) == {
        1: {"x": 1, "value": 100.0, "n": 1, "min": 100.0, "max": 100.0, "relative": None}
    }
    assert body["filters"] == {
        "filesystem": ["EXT4"],
        "version_min": ["15"],
        "param.clients": ["1"],
    }


def test_approximate_values_and_left_out_measurements_are_noted(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0}, approximate=True))
    store(bob, sweep_document({80: 1800.0}, parameter="clients_from"))

    body = anonymous_api.get(URL, THROUGHPUT).json()

    assert body["x_values"] == [1]
    notes = " ".join(body["notes"])
    assert "Approximate values included: 1 of 1" in notes
    assert "1 measurement without a clients value left out" in notes


def test_no_matching_result_is_an_empty_comparison_not_an_error(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0}))

    query = {**THROUGHPUT, "series": "filesystem", "reference": "raw", "filesystem": "zfs"}
    response = anonymous_api.get(URL, query)

    assert response.status_code == 200
    body = response.json()
    assert (body["x_values"], body["series"]) == ([], [])
    assert body["notes"] == ["No measurement you may see matches this comparison."]


@pytest.mark.parametrize("cores", ["-1", "99999999999999999999"])
def test_a_filter_no_stored_number_can_match_is_an_empty_comparison(
    anonymous_api, alice_api, bob, cores
):
    """Out of the column's range, so Django builds no statement for it (it
    raised EmptyResultSet where the statement keys the kept answer, and
    where PostgreSQL aggregates): a 500. As on /api/v1/measurements/, it
    matches nothing, for the public and for a signed-in user alike."""
    store(bob, sweep_document({1: 100.0}))

    for api in (anonymous_api, alice_api):
        response = api.get(URL, {**THROUGHPUT, "cores": cores})

        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["x_values"], body["series"]) == ([], [])
        assert body["notes"] == ["No measurement you may see matches this comparison."]


@pytest.mark.parametrize(("axis", "section", "field", "other"), EMPTY_ABLE)
def test_the_empty_value_as_the_pages_show_it_is_a_reference_on_every_axis(
    anonymous_api, bob, axis, section, field, other
):
    """reference=(none) found the runs without mount options only: a series
    of runs that gave no filesystem (or driver, …), which the page and the
    chart label "(none)", could not be the reference under that name, and
    the 400 listed its value as a blank."""
    store(bob, sweep_document({1: 100.0}, **without(section, field)))
    store(bob, sweep_document({1: 130.0}, **without(section, field, **{field: other})))

    response = anonymous_api.get(URL, {**THROUGHPUT, "series": axis, "reference": "(none)"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reference"] == ""
    assert body["series"][0]["label"] == ""  # the reference first
    assert points(body, "")[1]["relative"] == 100.0
    (others,) = [s for s in body["series"] if s["label"] != ""]
    assert others["points"][0]["relative"] == pytest.approx(130.0)


def test_an_empty_text_parameter_is_a_reference_spelt_none(anonymous_api, bob):
    for mode, value in (("", 100.0), ("fast", 150.0)):
        document = sweep_document({1: value})
        document["runs"][0]["measurements"][0]["parameters"]["mode"] = mode
        store(bob, document)

    response = anonymous_api.get(URL, {**THROUGHPUT, "series": "param.mode", "reference": "(none)"})

    assert response.status_code == 200, response.content
    body = response.json()
    assert [s["label"] for s in body["series"]] == ["", "fast"]
    assert points(body, "fast")[1]["relative"] == 150.0


def test_a_reference_no_series_has_is_a_400_naming_the_values_as_the_page_shows_them(
    anonymous_api, bob
):
    store(bob, sweep_document({1: 100.0}, **without("storage", "filesystem")))
    store(bob, sweep_document({1: 100.0}, storage=XFS))

    missing = anonymous_api.get(URL, {**THROUGHPUT, "series": "filesystem", "reference": "zfs"})
    expected = "'zfs' is not a filesystem value of these results (they have: (none), xfs)"

    assert missing.status_code == 400
    assert missing.json()["error"]["message"] == f"reference: {expected}"


def test_none_is_a_400_where_no_series_is_empty(anonymous_api, bob):
    """cores and threads are numbers or unknown, never empty: a run that
    gives none is left out of a series by them, so "(none)" names no series."""
    store(bob, sweep_document({1: 100.0}, storage=XFS))
    store(bob, sweep_document({1: 100.0}))

    for axis, has in (("filesystem", "ext4, xfs"), ("cores", "8")):
        response = anonymous_api.get(URL, {**THROUGHPUT, "series": axis, "reference": "(none)"})

        assert response.status_code == 400, response.content
        message = response.json()["error"]["message"]
        assert message == (
            f"reference: '(none)' is not a {axis} value of these results (they have: {has})"
        )


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"metric": "throughput", "x": "param.clients"}, "benchmark"),
        ({"benchmark": "select-update", "x": "param.clients"}, "metric"),
        ({"benchmark": "select-update", "metric": "throughput"}, "x"),
        ({**THROUGHPUT, "benchmark": "no-such-bench"}, "benchmark"),
        ({"benchmark": "no-such-bench", "x": "engine"}, "benchmark"),
        ({**THROUGHPUT, "metric": "tps_relative"}, "metric"),
        ({**THROUGHPUT, "x": "ram_bytes_min"}, "x"),
        ({**THROUGHPUT, "x": "benchmark"}, "x"),
        ({**THROUGHPUT, "x": "param.Not-A-Name"}, "x"),
        ({**THROUGHPUT, "series": "colour"}, "series"),
        ({**THROUGHPUT, "series": "param.clients"}, "series"),
        ({**THROUGHPUT, "series": "filesystem", "reference": "zfs"}, "reference"),
        ({**THROUGHPUT, "reference": "ext4"}, "reference"),
        ({**THROUGHPUT, "filesytem": "ext4"}, "filesytem"),
        ({**THROUGHPUT, "cores": "many"}, "cores"),
        ({**THROUGHPUT, "param.Bad-Name": "1"}, "param.Bad-Name"),
        ({**THROUGHPUT, "cursor": "abc"}, "cursor"),
        ({**THROUGHPUT, "format": "xml"}, "format"),
        ("benchmark=select-update&metric=throughput&x=param.clients&x=engine", "x"),
        ("benchmark=%00&metric=throughput&x=param.clients", "benchmark"),
        ("benchmark=select-update&metric=%00&x=param.clients", "metric"),
        ({**THROUGHPUT, "param.clients": "\x00"}, "param.clients"),
        ({**THROUGHPUT, "submission": "not-a-uuid"}, "submission"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(anonymous_api, bob, query, field):
    store(bob, sweep_document({1: 100.0}))

    if isinstance(query, str):
        response = anonymous_api.get(f"{URL}?{query}")
    else:
        response = anonymous_api.get(URL, query)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert f"$.{field}" in [detail["path"] for detail in error["details"]]
    assert field in error["message"]


@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "9" * 5000, "-0"])
@pytest.mark.parametrize("name", ["clients", "isnull", "in", "contains", "exact"])
def test_any_parameter_filter_is_an_answer_never_a_server_error(anonymous_api, bob, name, value):
    # parameters named like lookups are keys; numbers JSON or Python cannot hold are text
    store(bob, sweep_document({1: 100.0}, parameter=name))

    response = anonymous_api.get(URL, {**THROUGHPUT, "x": f"param.{name}", f"param.{name}": value})

    assert response.status_code == 200, response.content
    assert response.json()["series"] == []


def test_a_parameter_named_like_a_lookup_is_filtered_as_a_key(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0, 2: 200.0}, parameter="in"))

    body = anonymous_api.get(URL, {**THROUGHPUT, "x": "param.in", "param.in": "2"}).json()

    assert list(points(body)) == [2]


def test_a_group_counts_exactly_what_the_filter_on_its_value_finds(anonymous_api, bob):
    # 20, 20.0 and "20" are the number 20; other spellings are text, for both
    for spelling in (20, 20.0, "20", "20.0", " 20", "2_0", "\u0662\u0660"):
        store(bob, sweep_document({spelling: 1.0}))

    grouped = points(anonymous_api.get(URL, THROUGHPUT).json())
    filtered = points(anonymous_api.get(URL, {**THROUGHPUT, "param.clients": "20"}).json())
    listed = anonymous_api.get("/api/v1/measurements/", {"param.clients": "20"}).json()

    assert grouped[20]["n"] == 3
    assert filtered == {20: grouped[20]}
    assert len(listed["results"]) == 3
    assert {" 20", "2_0", "20.0", "\u0662\u0660"} <= set(grouped)


def test_text_values_with_non_ascii_digits_are_ordered_not_a_server_error(anonymous_api, bob):
    for filesystem in ("x1\u00b2", "\u2460", "ext10", "ext2"):
        store(bob, sweep_document({1: 1.0}, storage={"filesystem": filesystem, "kind": "ssd"}))

    response = anonymous_api.get(URL, {**THROUGHPUT, "series": "filesystem"})

    assert response.status_code == 200, response.content
    labels = [series["label"] for series in response.json()["series"]]
    assert labels[:2] == ["ext2", "ext10"]
    assert sorted(labels) == sorted(["x1\u00b2", "\u2460", "ext10", "ext2"])


def test_postgresql_aggregates_any_number_of_measurements_without_a_cap(
    anonymous_api, bob, monkeypatch
):
    """The row cap is the embedded default's (SQLite aggregates in Python):
    PostgreSQL computes the cells, whatever the number of rows."""
    monkeypatch.setattr("benchhub.comparisons.selectors.MAX_ROWS", 2)
    store(bob, sweep_document({1: 100.0, 2: 200.0}))
    store(bob, sweep_document({4: 400.0, 1: 300.0}))

    response = anonymous_api.get(URL, THROUGHPUT)

    assert response.status_code == 200
    assert points(response.json())[1]["n"] == 2


def test_errors_stay_json_when_csv_was_asked_for(anonymous_api, db):
    response = anonymous_api.get(URL, {"format": "csv"})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    paths = {detail["path"] for detail in response.json()["error"]["details"]}
    assert {"$.benchmark", "$.metric", "$.x"} <= paths


def test_csv_holds_the_same_table_as_the_json(anonymous_api, bob):
    store(bob, sweep_document({1: 200.0, 2: 400.0}))
    store(bob, sweep_document({1: 300.0, 2: 100.0, 4: 50.0}, storage=XFS))
    query = {**THROUGHPUT, "series": "filesystem", "reference": "ext4"}

    body = anonymous_api.get(URL, query).json()
    response = anonymous_api.get(URL, {**query, "format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    expected = [
        {
            "series": series["label"],
            "x": str(point["x"]),
            "value": point["value"],
            "n": point["n"],
            "min": point["min"],
            "max": point["max"],
            "relative": point["relative"],
            "verdict": (point["verdict"] or {}).get("verdict", ""),
        }
        for series in body["series"]
        for point in series["points"]
    ]
    as_read = [
        {
            **row,
            "value": float(row["value"]),
            "n": int(row["n"]),
            "min": float(row["min"]),
            "max": float(row["max"]),
            "relative": float(row["relative"]) if row["relative"] else None,
            "verdict": row["verdict"],
        }
        for row in [
            {
                key: value
                for key, value in row.items()
                if key in ("series", "x", "value", "n", "min", "max", "relative", "verdict")
            }
            for row in rows
        ]
    ]
    assert as_read == expected
    assert len(rows) == 5


def test_csv_cells_from_user_text_cannot_be_formulas(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0}, storage={"filesystem": "=HYPERLINK(1)", "kind": "ssd"}))

    response = anonymous_api.get(URL, {**THROUGHPUT, "series": "filesystem", "format": "csv"})

    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1][0].startswith("'=")


def test_a_negative_number_in_the_csv_stays_a_number(anonymous_api, bob):
    store(bob, sweep_document({-5: 100.0, "-1+2": 50.0}, parameter="offset"))

    query = {**THROUGHPUT, "x": "engine", "series": "param.offset", "format": "csv"}
    response = anonymous_api.get(URL, query)

    labels = {row[0] for row in csv.reader(io.StringIO(response.content.decode()))}
    assert {"-5", "'-1+2"} <= labels  # the number as it is, text that starts a formula guarded


def test_one_query_reads_every_cell(anonymous_api, bob, django_assert_max_num_queries):
    for filesystem in ("ext4", "xfs", "zfs", "btrfs"):
        for _ in range(3):
            store(
                bob,
                sweep_document(
                    {c: float(c) for c in (1, 2, 4, 8, 16, 32)},
                    storage={"filesystem": filesystem, "kind": "ssd"},
                ),
            )

    # The metric with its benchmark, the parameter names its results use
    # (whether a cell could pool one), the statement's work memory, the cells
    # with their runs (one statement), then the repetition samples of cells
    # too small for a U test: never a query per cell.
    with django_assert_max_num_queries(5):
        response = anonymous_api.get(URL, {**THROUGHPUT, "series": "filesystem"})

    body = response.json()
    assert len(body["series"]) == 4
    assert all(point["n"] == 3 for s in body["series"] for point in s["points"])


def test_the_endpoint_is_in_the_openapi_schema(db, tmp_path):
    out = tmp_path / "schema.yml"

    call_command("spectacular", "--file", str(out))

    schema = out.read_text()
    assert "/api/v1/comparisons/:" in schema
    assert "comparisons_retrieve" in schema
    assert "text/csv" in schema


def test_a_comparison_is_built_with_the_cyclic_collector_paused(anonymous_api, bob, monkeypatch):
    # benchhub.lib.collector: its tens of thousands of acyclic tuples cost a
    # third of a large comparison in collector passes; the collector is back
    # on once the answer is built, and the runs per cell are gone by then.
    import gc

    from benchhub.comparisons import selectors

    store(bob, sweep_document({1: 100.0, 2: 10.0}))
    seen, built = [], []
    scores = selectors.combined_scores

    def recording(comparison):
        seen.append((gc.isenabled(), len(comparison.cell_runs)))
        built.append(comparison)
        return scores(comparison)

    monkeypatch.setattr(selectors, "combined_scores", recording)
    gc.enable()

    assert anonymous_api.get(URL, THROUGHPUT).status_code == 200

    assert seen == [(False, 2)]  # paused, and the runs of both cells at hand
    assert gc.isenabled()
    # the runs are dropped once used: freed before the collector resumes
    assert built[0].cell_runs == {}
