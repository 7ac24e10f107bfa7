"""The compare page keeps its form while it is used: an htmx answer holds
the result and, out of band, only the controls that depend on it; pooled
cells, TOTALS, one-category axes and error bars are explained."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

PAGE = "/compare/"
HTMX = {"HX-Request": "true"}


def store(user, document) -> None:
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


def test_an_htmx_answer_never_carries_the_form_only_what_depends_on_the_result(client, bob):
    store(bob, sweep_document({1: 300.0, 20: 1500.0}))

    response = client.get(
        f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients&engine=Post",
        headers={**HTMX, "HX-Trigger-Name": "engine"},
    )

    fragment = response.content.decode()
    assert '<form id="comparison-form"' not in fragment
    assert 'id="cmp-benchmark"' not in fragment  # the select being used is never sent back
    assert 'id="cmp-filter-' not in fragment  # nor the fixed filters being typed in
    for part in ("cmp-field-metric", "cmp-field-x", "cmp-field-series", "cmp-field-reference"):
        assert f'id="{part}" hx-swap-oob="true"' in fragment
    # the result is announced by a live region that lives outside the swap
    assert 'hx-swap-oob="innerHTML:#comparison-status"' in fragment
    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")
    text = page.content.decode()
    status = text[text.index('id="comparison-status"') :]
    assert 'aria-live="polite"' in status.split(">")[0]
    assert text.index('id="comparison-status"') < text.index('<div id="comparison"')


def test_a_request_sent_before_a_new_benchmark_was_shown_drops_the_old_metric(client, bob):
    store(bob, sweep_document({1: 300.0, 20: 1500.0}))
    # Typing in a filter while sql-bench was still loading: the form still
    # holds select-update's metric and says so.
    query = (
        "benchmark=sql-bench&metric=throughput&x=param.clients&engine=postgresql"
        "&shown_benchmark=select-update"
    )

    response = client.get(f"{PAGE}?{query}", headers={**HTMX, "HX-Trigger-Name": "engine"})

    pushed = parse_qs(urlsplit(response.headers["HX-Push-Url"]).query)
    assert pushed["benchmark"] == ["sql-bench"] and pushed["metric"] == ["seconds"]
    assert pushed["engine"] == ["postgresql"]
    fragment = response.content.decode()
    assert 'id="cmp-fixed-fields" hx-swap-oob="true"' in fragment
    assert '<option value="seconds" selected>' in fragment


def test_cells_pooling_an_unfixed_parameter_say_so_with_one_click_to_fix_it(client, bob):
    for values in ({1: 685.0, 20: 3000.0}, {1: 700.0, 20: 3100.0}, {1: 650.0, 20: 2900.0}):
        store(bob, sweep_document(values))

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=filesystem")

    text = page.content.decode()
    pooled = text[text.index('id="comparison-pooled"') :]
    assert "Pooled clients" in pooled and "(1, 20)" in pooled
    links = re.findall(r'<a href="([^"]+)" class="fix-link">clients = (\w+)</a>', pooled)
    assert [value for _, value in links] == ["1", "20"]
    fixed = client.get(links[1][0].replace("&amp;", "&")).content.decode()
    assert 'id="comparison-pooled"' not in fixed
    data = json.loads(
        re.search(r'id="comparison-data" type="application/json">(.*?)</script>', fixed).group(1)
    )
    assert data["series"][0]["points"][0]["value"] == 3000.0
    # clients on the axis pools nothing
    by_clients = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")
    assert 'id="comparison-pooled"' not in by_clients.content.decode()


def test_measurements_left_out_of_the_chart_pool_nothing_on_it(client, bob):
    # Seed 004's two approximate points have clients_from (20, 80), no
    # clients: left out of a comparison by clients, their cell (no x) was
    # still read for pooling, and the page said a point it draws was the
    # median of clients_from 20 and 80, which no drawn point held.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    store(bob, sweep_document({1: 685.0, 20: 3000.0}))
    store(bob, sweep_document({20: 400.0, 80: 390.0}, parameter="clients_from"))

    with CaptureQueriesContext(connection) as queries:
        page = client.get(
            f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
        )

    text = page.content.decode()
    assert "2 measurements without a clients value left out." in text
    assert 'id="comparison-pooled"' not in text
    # no drawn cell mixes anything, so the pooling query is not even run
    assert not any('COUNT("results_measurement"."id")' in q["sql"] for q in queries)


def test_a_drawn_cell_pools_its_own_parameters_not_those_left_out(client, bob):
    for duration in (60, 300):
        document = sweep_document({1: 685.0, 20: 3000.0 + duration})
        document["runs"][0]["parameters"] = {"duration": duration}
        store(bob, document)
    store(bob, sweep_document({20: 400.0, 80: 390.0}, parameter="clients_from"))

    page = client.get(
        f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
    )

    text = page.content.decode()
    pooled = text[text.index('id="comparison-pooled"') :]
    pooled = pooled[: pooled.index("</div>")]
    assert "Pooled duration" in pooled
    assert "clients_from" not in pooled


def test_a_point_and_a_run_parameter_of_one_name_are_told_apart(client, bob):
    # A backup run names its tool for each point and for the run: the box
    # said "Pooled tool" twice, with links that fix two different filters.
    for tool in ("gbak", "pg_dump"):
        document = sweep_document({1: 685.0, 20: 3000.0})
        document["runs"][0]["parameters"] = {"tool": tool}
        for measurement in document["runs"][0]["measurements"]:
            measurement["parameters"]["tool"] = tool
        store(bob, document)

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")

    text = html.unescape(page.content.decode())
    pooled = text[text.index('id="comparison-pooled"') :]
    pooled = pooled[: pooled.index("</div>")]
    assert pooled.count("<strong>Pooled tool:</strong>") == 1
    assert pooled.count("<strong>Pooled tool (run parameter):</strong>") == 1
    assert "run_param.tool=gbak" in pooled and "param.tool=gbak" in pooled


def test_pooled_values_measured_as_often_are_offered_in_natural_order(client, bob):
    # Each clients value once per sweep: no value is measured more often, so
    # the links follow the values (1, 2, 4, 16 …), not "1, 16, 2, 20, 4".
    for scale in (1.0, 1.1):
        store(bob, sweep_document({c: scale * 100 * c for c in (16, 2, 1, 40, 4, 20)}))

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=filesystem")

    text = page.content.decode()
    pooled = text[text.index('id="comparison-pooled"') :]
    links = re.findall(r'class="fix-link">clients = (\w+)</a>', pooled)
    assert links == ["1", "2", "4", "16", "20", "40"]
    assert "(1, 2, 4, 16, 20, 40)" in pooled


def test_runs_of_other_run_parameters_in_one_cell_are_pooled_too(client, bob):
    # Same clients, but one run lasted 60 s and the others 300 s: the cells
    # mix run parameters, which the page must notice as it does point ones.
    for duration in (60, 300, 300):
        document = sweep_document({1: 685.0, 20: 3000.0 + duration})
        document["runs"][0]["parameters"] = {"duration": duration, "rows": 1000}
        store(bob, document)

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")

    text = page.content.decode()
    pooled = text[text.index('id="comparison-pooled"') :]
    assert "duration" in pooled and "(300, 60)" in pooled
    assert "rows" not in pooled[: pooled.index("</")]


def test_totals_is_the_first_table_row_and_the_chart_is_told_to_leave_it_out(client, bob):
    seconds = {"insert": 12.0, "select_range": 30.0, "TOTALS": 900.0}
    store(bob, sweep_document(seconds, metric="throughput", parameter="operation"))

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.operation")

    text = html.unescape(page.content.decode())
    table = text[text.index('id="comparison-table"') :]
    rows = re.findall(r'<th scope="row">(.*?)</th>', table)
    assert rows[0] == "TOTALS"
    assert "TOTALS (the article's own sum) is the table's first row and not drawn" in text


def test_an_axis_with_one_category_says_why(client, bob):
    store(bob, sweep_document({1: 300.0, 20: 1500.0}))

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=engine")

    assert "The axis has one category: every measurement that fits has engine = postgresql" in (
        page.content.decode()
    )


def test_error_bars_are_min_max_as_the_caption_table_and_tooltip_say(client, bob):
    """Whatever n: at 5 measurements with an outlier, the bar spans 100 to
    1000, the range the table shows beside the median, not the quartiles
    (200 to 400) under a caption saying min-max."""
    for value in (100.0, 200.0, 300.0, 400.0, 1000.0):
        store(bob, sweep_document({1: value, 2: value}))
    store(bob, sweep_document({4: 10.0}))
    store(bob, sweep_document({4: 30.0}))

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")

    text = page.content.decode()
    bars = json.loads(
        re.search(r'id="comparison-errorbars" type="application/json">(.*?)</script>', text).group(
            1
        )
    )["throughput"]
    assert bars["1"] == [100.0, 1000.0, "range"]
    assert bars["4"] == [10.0, 30.0, "range"]
    table = text[text.index('id="comparison-table"') :]
    assert "min\u2013max when n &gt; 1" in table
    assert '<span class="value">300</span> <span class="n">n=5, 100\u20131000</span>' in table


def test_error_bars_by_submission_are_keyed_by_its_uuid_as_the_chart_spells_it(client, bob):
    # x = submission: each x is a uuid, which the chart reads as the API
    # writes it (its text), and looks up by JSON.stringify.
    document = sweep_document({1: 100.0, 2: 300.0})
    store(bob, document)

    page = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=submission")

    assert page.status_code == 200
    text = page.content.decode()
    bars = json.loads(
        re.search(r'id="comparison-errorbars" type="application/json">(.*?)</script>', text).group(
            1
        )
    )["throughput"]
    assert bars == {json.dumps(document["uuid"]): [100.0, 300.0, "range"]}


def test_the_chart_names_the_table_as_its_text_alternative(client, bob):
    store(bob, sweep_document({1: 300.0, 20: 1500.0}))

    text = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients")

    page = text.content.decode()
    assert 'aria-describedby="comparison-table-caption"' in page
    assert '<caption id="comparison-table-caption">' in page


def test_the_page_looks_for_pooled_parameters_only_where_a_name_is_left_free(client, bob):
    # Runs whose only parameter is on the axis (x = clients) cannot pool
    # anything: the cells statement carries no check and the pooling query
    # does not run. A run parameter that no axis or filter fixes brings both
    # back, and with them the note when its values differ.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for values in ({1: 685.0, 20: 3000.0}, {1: 700.0, 20: 3100.0}):
        document = sweep_document(values)
        document["runs"][0]["parameters"] = {}
        store(bob, document)
    url = f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients"

    def statements(address: str) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            page = client.get(address)
        assert page.status_code == 200
        return [query["sql"] for query in queries.captured_queries]

    def pooling(sql: str) -> bool:  # comparison_pooling's query: Count("id") per keys
        return 'COUNT("results_measurement"."id")' in sql

    pinned = statements(url)
    assert not any("jsonb_hash" in sql or pooling(sql) for sql in pinned)

    for duration in (60, 300):
        document = sweep_document({1: 690.0, 20: 3050.0})
        document["runs"][0]["parameters"] = {"duration": duration}
        store(bob, document)
    free = statements(url)
    assert any("jsonb_hash" in sql for sql in free)
    assert any(pooling(sql) for sql in free)
    assert "Pooled" in client.get(url).content.decode()
    # fixed by a filter, it is taken again: nothing left to look for
    fixed = statements(f"{url}&run_param.duration=60")
    assert not any("jsonb_hash" in sql or pooling(sql) for sql in fixed)


def test_the_chart_gets_the_interval_each_verdict_reads_in_the_metrics_unit(client, bob):
    """The shaded bar beside a point: the reference's median times the 95 %
    interval of the ratio its verdict gives, keyed like the error bars; none
    for the reference itself."""
    for value in (100.0, 103.5, 98.0, 101.0, 99.25):
        for filesystem, scale in (("ext4", 1.0), ("xfs", 1.31)):
            store(bob, sweep_document({1: value * scale}, storage={"filesystem": filesystem}))
    query = "benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"

    text = client.get(f"{PAGE}?{query}&reference=ext4").content.decode()
    api = client.get(f"/api/v1/comparisons/?{query}&reference=ext4").json()

    intervals = json.loads(
        re.search(r'id="comparison-intervals" type="application/json">(.*?)</script>', text).group(
            1
        )
    )
    assert list(intervals) == ["xfs"]
    (xfs,) = api["series"][1]["points"]
    judged = xfs["verdict"]
    assert intervals["xfs"]["1"] == pytest.approx(
        [100.0 * judged["ratio_low"], 100.0 * judged["ratio_high"]], rel=1e-9
    )
    assert intervals["xfs"]["1"][0] < xfs["value"] < intervals["xfs"]["1"][1]
    assert "the chart's shaded bar beside a point is the 95 % interval its verdict reads" in text
