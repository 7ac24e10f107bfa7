"""/compare/chart.svg: a comparison as an image another page embeds."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from benchhub.comparisons.chart_image import nice_ceiling
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document

SVG = "/compare/chart.svg"
NS = {"svg": "http://www.w3.org/2000/svg"}
MARIADB = {"version_string": "10.11.19-MariaDB-0+deb12u1"}
THROUGHPUT = "benchmark=select-update&metric=throughput&x=param.clients&series=engine"
HOSTILE_CPU = '</text><script>alert("owned")</script><text>'


def store(user, document) -> None:
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


def svg_of(client, query: str) -> ET.Element:
    response = client.get(f"{SVG}?{query}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "image/svg+xml; charset=utf-8"
    return ET.fromstring(response.content)  # noqa: S314 -- our own server's answer


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iterfind(".//svg:text", NS)]


@pytest.fixture
def engines(bob):
    # Three runs on PostgreSQL (a spread at clients=20), one on MariaDB; unequal values.
    for values in ({1: 310.0, 20: 1500.0}, {1: 290.0, 20: 1720.0}, {1: 300.0, 20: 1610.0}):
        store(bob, sweep_document(values))
    store(bob, sweep_document({1: 205.0, 20: 930.0, 64: 880.0}, database=MARIADB))


def test_numeric_x_draws_a_line_per_series_with_its_medians_and_ranges(client, engines):
    root = svg_of(client, THROUGHPUT)

    lines = root.findall(".//svg:polyline", NS)
    assert len(lines) == 2  # one per engine
    assert sorted(len(line.get("points").split()) for line in lines) == [2, 3]
    assert len(root.findall(".//svg:circle", NS)) == 5
    shown = texts(root)
    assert {"postgresql", "mariadb"} <= set(shown)  # the legend
    assert [t for t in shown if t in ("1", "20", "64")] == ["1", "20", "64"]  # x in order
    assert "throughput (tx/s)" in shown
    # Whiskers where a cell has several measurements: PostgreSQL's two cells.
    whiskers = [line for line in root.findall(".//svg:line", NS) if line.get("stroke") == "#333"]
    assert len(whiskers) == 2
    # The axis' top is the nice ceiling of the largest value drawn (1,720 → 2,000).
    assert "2,000" in shown and "2,500" not in shown


def test_text_x_draws_grouped_bars_without_the_totals_row(client, bob):
    store(bob, sql_bench_document({"insert": 41.5, "select": 12.25, "TOTALS": 60.0}, "ext4"))
    store(bob, sql_bench_document({"insert": 55.0, "select": 9.5, "TOTALS": 70.0}, "xfs"))

    root = svg_of(client, "benchmark=sql-bench&metric=seconds&x=param.operation&series=filesystem")

    bars = [rect for rect in root.findall(".//svg:rect", NS) if rect.get("width") != "12"]
    assert len(bars) == 1 + 4  # the white background, two operations by two filesystems
    assert not root.findall(".//svg:polyline", NS)
    assert "TOTALS" not in texts(root)
    assert {"ext4", "xfs", "insert", "select"} <= set(texts(root))


def test_uploaded_text_is_escaped_and_the_image_parses(client, bob):
    store(bob, sweep_document({1: 120.0, 8: 640.0}, hardware={"cpu": HOSTILE_CPU, "cores": 4}))

    response = client.get(
        f"{SVG}?benchmark=select-update&metric=throughput&x=param.clients&series=cpu_model"
    )

    body = response.content.decode()
    assert "<script" not in body
    assert HOSTILE_CPU in texts(ET.fromstring(body))  # noqa: S314 -- our own server's answer


def test_anyone_may_keep_the_image_for_five_minutes_but_a_signed_in_user_only_for_themself(
    client, engines, bob
):
    assert client.get(f"{SVG}?{THROUGHPUT}")["Cache-Control"] == "public, max-age=300"
    client.force_login(bob)
    assert client.get(f"{SVG}?{THROUGHPUT}")["Cache-Control"] == "private, max-age=300"


def test_a_query_the_comparison_refuses_is_a_400_naming_it(client, db):
    response = client.get(f"{SVG}?benchmark=select-update&metric=nope&x=param.clients")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    assert "metric" in response.content.decode() and "nope" in response.content.decode()


def test_the_comparison_page_links_its_image(client, engines):
    page = client.get(f"/compare/?{THROUGHPUT}").content.decode()

    assert f'href="{SVG}?{THROUGHPUT}"' in page.replace("&amp;", "&")


@pytest.mark.parametrize(
    ("value", "top"),
    [(0.0, 1.0), (0.7, 1.0), (1.0, 1.0), (1720.0, 2000.0), (2100, 2500), (5001, 10000)],
)
def test_the_axis_ends_at_a_round_number_at_or_above_the_largest_value(value, top):
    assert nice_ceiling(value) == top
