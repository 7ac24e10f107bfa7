import io
import json
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from benchhub.comparisons.presets import PRESETS
from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document
from tests.imports.test_seed_articles import SQL_BENCH_DOC, effective_environment, load

PAGE = "/compare/"
HTMX = {"HX-Request": "true"}
MARIADB = {"version_string": "10.11.19-MariaDB-0+deb12u1"}
THROUGHPUT = "benchmark=select-update&metric=throughput&x=param.clients&series=engine"


def store(user, document, status=Submission.Status.APPROVED) -> Submission:
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def two_engines(bob):
    store(bob, sweep_document({1: 300.0, 20: 1500.0}))
    store(bob, sweep_document({1: 200.0, 20: 900.0}, database=MARIADB))


def embedded_json(page: str, element_id: str) -> dict:
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    assert match, f"no #{element_id}"
    return json.loads(match.group(1))


def test_the_page_without_a_query_offers_the_form_and_the_seed_comparisons(client, db):
    response = client.get(PAGE)

    assert response.status_code == 200
    page = response.content.decode()
    assert '<form id="comparison-form"' in page
    assert 'name="benchmark"' in page and 'name="metric"' in page
    assert "Choose a benchmark to start" in page
    assert "comparison-chart" not in page
    for preset in PRESETS:
        assert preset.title in page
    # Reached from the navigation and from the home page.
    assert 'href="/compare/"' in page
    assert 'href="/compare/"' in client.get("/").content.decode()


def test_the_chart_reads_exactly_what_the_api_answers(client, two_engines):
    page = client.get(f"{PAGE}?{THROUGHPUT}").content.decode()

    api = client.get(f"/api/v1/comparisons/?{THROUGHPUT}").json()
    assert embedded_json(page, "comparison-data") == api
    labels = embedded_json(page, "comparison-labels")
    assert labels["y"] == "throughput (tx/s), higher is better"
    assert labels["x"] == "clients"
    assert '<canvas id="comparison-chart"' in page
    # The same numbers in the table, with n; links to the same query's JSON and CSV.
    table = page[page.index('id="comparison-table"') :]
    assert "1500" in table and "900" in table and "n=1" in table
    assert f'href="/api/v1/comparisons/?{THROUGHPUT.replace("&", "&amp;")}"' in page
    assert "format=csv" in page
    assert "Download PNG" in page


def test_a_link_with_quiet_verdicts_says_why_its_verdicts_differ(client, two_engines):
    """verdicts=quiet is in the URL only: where it left a cell's runs out, the
    cell read "insufficient data" beside its n and min-max, and nothing on
    the page said why."""
    caption = "runs with a noise flag are left out of the verdicts"

    assert caption in client.get(f"{PAGE}?{THROUGHPUT}&verdicts=quiet").content.decode()
    assert caption not in client.get(f"{PAGE}?{THROUGHPUT}").content.decode()


def test_a_verdict_shows_its_p_value_and_interval_not_only_on_hover(client, bob):
    """The p-value and the interval were in the cell's title only: out of
    reach on a phone, which has no hover, and of most keyboard users."""
    for value in (100.0, 101.0, 102.0, 103.0):
        store(bob, sweep_document({1: value}))
        store(bob, sweep_document({1: 2 * value}, database=MARIADB))

    page = client.get(f"{PAGE}?{THROUGHPUT}").content.decode()

    table = page[page.index('id="comparison-table"') :]
    # 4 runs against 4, fully apart: the exact U test's 2/70
    assert '<span class="verdict-numbers">p = 0.029 · ratio 0.5 (' in table


def test_no_verdict_against_a_reference_of_zero_is_not_blamed_on_single_values(client, bob):
    for _ in range(4):
        store(bob, sweep_document({1: 0.0}, metric="errors", unit="count"))
        store(bob, sweep_document({1: 2.0}, metric="errors", unit="count", database=MARIADB))

    page = client.get(
        f"{PAGE}?benchmark=select-update&metric=errors&x=param.clients"
        "&series=engine&reference=postgresql"
    ).content.decode()

    cell = re.search(r'<span class="verdict verdict-insufficient-data" title="([^"]*)"', page)
    assert cell, "no insufficient-data cell"
    assert "the reference is 0" in cell.group(1)


def test_too_few_runs_for_a_test_still_show_their_ratio_under_insufficient_data(client, bob):
    """Two unrepeated runs a side, twice apart: no test can tell (cb665eb),
    but the ratio the JSON and the CSV give is on the page too."""
    for value in (100.0, 104.0):
        store(bob, sweep_document({1: value}))
        store(bob, sweep_document({1: 2 * value}, database=MARIADB))

    page = client.get(f"{PAGE}?{THROUGHPUT}").content.decode()

    table = page[page.index('id="comparison-table"') :]
    assert "insufficient data" in table
    assert '<span class="verdict-numbers">ratio 0.5</span>' in table


def test_htmx_gets_the_fragment_and_the_shareable_url_is_pushed(client, two_engines):
    # As the form sends it: empty fields, the series before x.
    query = (
        "benchmark=select-update&metric=throughput&series=engine&x=param.clients"
        "&reference=&engine=&filesystem=&add_filter=&add_value="
    )

    response = client.get(f"{PAGE}?{query}", headers=HTMX)

    fragment = response.content.decode()
    assert fragment.startswith('<div id="comparison"')
    assert "<html" not in fragment
    assert "Comparisons from the seed articles" not in fragment
    assert response["HX-Push-Url"] == f"{PAGE}?{THROUGHPUT}"


def test_the_form_sent_without_javascript_lands_on_the_shareable_url(client, two_engines):
    query = "series=engine&benchmark=select-update&metric=throughput&x=param.clients&engine="

    response = client.get(f"{PAGE}?{query}")

    assert response.status_code == 302
    assert response["Location"] == f"{PAGE}?{THROUGHPUT}"
    assert client.get(response["Location"]).status_code == 200


def test_a_filter_added_in_the_form_becomes_part_of_the_url(client, two_engines):
    # Without JavaScript the name and value are sent as a pair (with it,
    # compare.js makes them a field of the form first: see the browser test).
    query = f"{THROUGHPUT}&add_filter=param.clients&add_value=20"

    response = client.get(f"{PAGE}?{query}")

    assert response.status_code == 302
    assert response.url == f"{PAGE}?{THROUGHPUT}&param.clients=20"
    page = client.get(response.url).content.decode()
    assert embedded_json(page, "comparison-data")["x_values"] == [20]
    assert 'name="param.clients" value="20"' in page


def test_a_new_benchmark_brings_its_own_first_metric(client, db):
    articles_load()

    response = client.get(
        f"{PAGE}?benchmark=tpcb&metric=throughput&x=filesystem&series=io_scheduler",
        headers={**HTMX, "HX-Trigger-Name": "benchmark"},
    )

    pushed = dict(parse_qsl(urlsplit(response["HX-Push-Url"]).query))
    assert pushed["metric"] == "tps"  # tpcb's first metric in the catalog
    assert 'value="tps_relative"' in response.content.decode()


def test_another_benchmark_keeps_the_environment_and_drops_the_rest(client, db):
    articles_load()
    query = (
        "benchmark=tpc-average&metric=seconds&x=config_profile&series=param.operation"
        "&reference=TOTALS&param.operation=TOTALS&os_family=freebsd"
    )

    response = client.get(f"{PAGE}?{query}", headers={**HTMX, "HX-Trigger-Name": "benchmark"})

    assert response["HX-Push-Url"] == (
        f"{PAGE}?benchmark=tpc-average&metric=score_relative&x=config_profile&os_family=freebsd"
    )


def test_x_defaults_to_clients_when_the_data_have_them(client, two_engines):
    response = client.get(f"{PAGE}?benchmark=select-update", headers=HTMX)

    assert (
        response["HX-Push-Url"]
        == f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients"
    )
    assert '<option value="param.clients" selected>' in response.content.decode()


def test_a_reference_left_over_from_another_series_is_dropped_with_a_note(client, two_engines):
    response = client.get(f"{PAGE}?{THROUGHPUT}&reference=ext4", headers=HTMX)

    assert response["HX-Push-Url"] == f"{PAGE}?{THROUGHPUT}"
    page = response.content.decode()
    assert "shown without reference" in page
    assert embedded_json(page, "comparison-data")["reference"] is None


def test_one_series_drops_the_reference_with_a_note(client, two_engines):
    # "— one series —" chosen: the reference select, still enabled, sends its value.
    query = "benchmark=select-update&metric=throughput&x=param.clients"

    response = client.get(f"{PAGE}?{query}&series=&reference=postgresql", headers=HTMX)

    assert response["HX-Push-Url"] == f"{PAGE}?{query}"
    page = response.content.decode()
    assert "This comparison cannot be drawn" not in page
    assert (
        "<li>reference &#x27;postgresql&#x27; needs a series; shown without reference.</li>" in page
    )
    assert embedded_json(page, "comparison-data")["reference"] is None
    assert 'id="cmp-reference" name="reference" disabled' in page


def test_a_metric_the_benchmark_lacks_is_named_not_replaced(client, two_engines):
    query = "benchmark=select-update&metric=throughputt&x=param.clients"

    response = client.get(f"{PAGE}?{query}")

    assert response.status_code == 200  # no redirect to another metric
    page = response.content.decode()
    assert "<strong>metric</strong>: select-update has no metric &#x27;throughputt&#x27;" in page
    assert "comparison-chart" not in page
    assert client.get(f"/api/v1/comparisons/?{query}").status_code == 400
    htmx = client.get(f"{PAGE}?{query}", headers=HTMX)
    assert htmx["HX-Push-Url"] == f"{PAGE}?{query}"


def test_the_reference_stays_selected_when_another_field_is_wrong(client, two_engines):
    response = client.get(f"{PAGE}?{THROUGHPUT}&reference=postgresql&cores=many", headers=HTMX)

    page = response.content.decode()
    assert "<strong>cores</strong>" in page
    reference = page[
        page.index('id="cmp-reference"') : page.index("</select>", page.index('id="cmp-reference"'))
    ]
    assert '<option value="postgresql" selected>' in reference
    assert "reference=postgresql" in response["HX-Push-Url"]


def test_bad_input_is_shown_naming_the_field(client, two_engines):
    response = client.get(f"{PAGE}?benchmark=select-update&metric=throughput&x=colour")

    assert response.status_code == 200
    page = response.content.decode()
    assert "This comparison cannot be drawn" in page
    assert "<strong>x</strong>" in page
    assert "comparison-chart" not in page


def test_unknown_filters_are_named_too(client, two_engines):
    page = client.get(f"{PAGE}?{THROUGHPUT}&filesytem=zfs").content.decode()

    assert "<strong>filesytem</strong>: unknown filter" in page


def test_no_result_is_a_message_not_an_empty_chart(client, two_engines):
    page = client.get(f"{PAGE}?{THROUGHPUT}&filesystem=zfs").content.decode()

    assert 'id="comparison-empty"' in page
    assert "No results to compare" in page
    assert "comparison-chart" not in page


@pytest.mark.parametrize("cores", ["-1", "99999999999999999999"])
def test_a_filter_no_stored_number_can_match_is_the_no_result_message(
    client, alice, two_engines, cores
):
    signed_in = Client()
    signed_in.force_login(alice)
    for browser in (client, signed_in):
        for headers in ({}, HTMX):
            response = browser.get(f"{PAGE}?{THROUGHPUT}&cores={cores}", headers=headers)

            assert response.status_code == 200
            assert "No results to compare" in response.content.decode()


def test_every_seed_preset_draws_from_the_demo_data(client, db, settings):
    settings.DEBUG = True  # load_demo_data's demo superuser exists only in development
    call_command("load_demo_data", stdout=io.StringIO())

    for preset in PRESETS:
        body = client.get(f"/api/v1/comparisons/?{preset.query}").json()
        assert body.get("series"), (preset.title, body)
        page = client.get(f"{PAGE}?{preset.query}").content.decode()
        assert '<canvas id="comparison-chart"' in page, preset.title


def test_the_seed_003_preset_is_relative_to_the_raw_device(client, db):
    articles_load()
    preset = next(p for p in PRESETS if ("reference", "raw") in p.params)

    body = client.get(f"/api/v1/comparisons/?{preset.query}").json()

    assert body["series"][0]["label"] == "raw"
    relative = {s["label"]: s["points"][0]["relative"] for s in body["series"]}
    assert relative["raw"] == 100.0
    assert relative["ext4"] == pytest.approx(108.84)


def test_the_seed_002_preset_shows_the_articles_ufs_column_not_pooled_with_softupdates(client, db):
    """The article has UFS, UFS with softupdates and ZFS for my-innodb-heavy-4G.cnf;
    series by filesystem pooled the two UFS runs into a median of both (142.5 s,
    a number the article does not print). The preset keeps runs without mount
    options, as the article's UFS/ZFS columns are: one run a cell, its TOTALS."""
    articles_load()
    document = load(SQL_BENCH_DOC)
    totals = {}
    for run in document["runs"]:
        environment = effective_environment(document, run)
        storage = environment["storage"]
        profile = environment["database"]["config_profile"]
        key = (profile, storage["filesystem"], bool(storage.get("mount_options")))
        (value,) = (
            m["value"] for m in run["measurements"] if m["parameters"]["operation"] == "TOTALS"
        )
        totals[key] = value
    innodb = "my-innodb-heavy-4G.cnf"
    assert totals[innodb, "ufs", False] != totals[innodb, "ufs", True]  # the case at hand
    preset = next(p for p in PRESETS if p.title.startswith("sql-bench TOTALS by my.cnf"))

    body = client.get(f"/api/v1/comparisons/?{preset.query}").json()

    cells = {
        (point["x"], series["label"]): point
        for series in body["series"]
        for point in series["points"]
    }
    assert cells[innodb, "ufs"]["n"] == 1
    assert cells[innodb, "ufs"]["value"] == totals[innodb, "ufs", False]
    assert len(cells) == 8  # 4 profiles x UFS/ZFS, as the article's table less ufs+su
    for (profile, filesystem), point in cells.items():
        assert point["value"] == totals[profile, filesystem, False], (profile, filesystem)


def test_runs_without_mount_options_are_a_filter_and_a_reference(client, bob):
    for options, value in (("", 100.0), ("noatime", 130.0), ("", 104.0), ("noatime,sync", 90.0)):
        storage = {"filesystem": "ext4", "mount_options": options}
        store(bob, sweep_document({1: value}, storage=storage))
    query = "benchmark=select-update&metric=throughput&x=param.clients"

    filtered = client.get(f"/api/v1/comparisons/?{query}&series=filesystem&mount_options=(none)")
    by_options = client.get(
        f"/api/v1/comparisons/?{query}&series=mount_options&reference=%28none%29"
    )

    (ext4,) = filtered.json()["series"]
    assert (ext4["points"][0]["n"], ext4["points"][0]["value"]) == (2, 102.0)
    series = {s["label"]: s["points"][0] for s in by_options.json()["series"]}
    assert series[""]["relative"] == 100.0
    assert series["noatime"]["relative"] == pytest.approx(100 * 130 / 102)
    listed = client.get("/api/v1/measurements/?benchmark=select-update&mount_option=(none)")
    assert sorted(m["value"] for m in listed.json()["results"]) == [100.0, 104.0]


def test_the_page_offers_and_draws_the_empty_series_as_the_reference_none(client, bob):
    """Runs that gave no filesystem are the series "(none)": the reference
    select left it out, and with reference=(none) (the empty mount options,
    which worked) the table showed absolute values under a caption that said
    so, while the chart drew them relative: the reference was "", falsy."""
    store(bob, sweep_document({1: 100.0}, storage={"kind": "ssd"}))
    store(bob, sweep_document({1: 130.0}, storage={"kind": "ssd", "filesystem": "xfs"}))
    query = "benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"

    absolute = client.get(f"{PAGE}?{query}").content.decode()
    page = client.get(f"{PAGE}?{query}&reference=%28none%29").content.decode()

    select = absolute[absolute.index('id="cmp-reference"') :]
    assert '<option value="(none)">(none)</option>' in select[: select.index("</select>")]
    select = page[page.index('id="cmp-reference"') :]
    assert '<option value="(none)" selected>(none)</option>' in select[: select.index("</select>")]
    table = page[page.index('id="comparison-table"') :]
    assert "throughput relative to filesystem = (none) (= 100)" in table
    assert '(none) <span class="ref">reference</span>' in table
    assert '<span class="value">130</span> <span class="absolute">130&nbsp;tx/s</span>' in table
    labels = json.loads(re.search(r'id="comparison-labels"[^>]*>(.*?)</script>', page).group(1))
    assert labels["y"] == "throughput, % of filesystem = (none)"


def test_a_metric_that_does_not_add_up_has_no_totals_column(client, db):
    """Seed 003's TPC-B relative to the raw device (%), by filesystem: the
    combined scores had a TOTALS (%) column of dashes beside the geometric mean."""
    articles_load()
    preset = next(p for p in PRESETS if ("series", "io_scheduler") in p.params)

    page = client.get(f"{PAGE}?{preset.query}").content.decode()

    summary = page.split('id="comparison-summary"')[1].split("</table>")[0]
    assert "geometric mean of ratios" in summary
    assert "TOTALS" not in summary


def test_user_text_is_escaped_in_the_page(client, bob):
    hostile = "<img src=x onerror=alert(1)>"
    store(bob, sweep_document({1: 100.0}, storage={"filesystem": hostile, "kind": "ssd"}))

    page = client.get(
        f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
    ).content.decode()

    assert hostile not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert embedded_json(page, "comparison-data")["series"][0]["label"] == hostile


def test_the_page_reads_in_a_few_queries_whatever_the_size(
    client, bob, django_assert_max_num_queries
):
    for filesystem in ("ext4", "xfs", "zfs"):
        for _ in range(3):
            store(
                bob,
                sweep_document(
                    {c: float(c) for c in (1, 2, 4, 8, 16)},
                    storage={"filesystem": filesystem, "kind": "ssd"},
                ),
            )

    # Benchmarks and their metrics (2), the metric (1), the parameter names
    # (1), the work memory (1), the cells with their runs (1), the samples of
    # small cells (1). Every run has the same parameters here: the cells say
    # so, and the page does not look for pooled parameters.
    with django_assert_max_num_queries(7):
        response = client.get(
            f"{PAGE}?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem",
            headers=HTMX,
        )

    assert embedded_json(response.content.decode(), "comparison-data")["series"]


def test_each_table_cell_shows_value_spread_and_verdict_or_a_dash(client, bob):
    for jitter in (0, 10, -10, 5):
        store(bob, sweep_document({1: 300.0 + jitter, 20: 1500.0 + jitter}))
        store(bob, sweep_document({1: 200.0 + jitter}, database=MARIADB))

    page = client.get(f"{PAGE}?{THROUGHPUT}&reference=postgresql").content.decode()

    table = page[page.index('id="comparison-table"') : page.index("</table>")]
    cells = re.findall(r'<td class="number">(.*?)</td>', table, re.S)
    # by row (clients 1, then 20), the reference's column first
    assert cells[0] == (
        '<span class="value">100</span> <span class="absolute">302.5&nbsp;tx/s</span> '
        '<span class="n">n=4, 290\u2013310</span>'
    )
    assert re.fullmatch(
        r'<span class="value">66\.9421</span> <span class="absolute">202\.5&nbsp;tx/s</span> '
        r'<span class="n">n=4, 190\u2013210</span> <span class="verdict verdict-worse" '
        r'title="mann-whitney-u, p = 0\.0286; ratio 0\.6694, 95 % interval [0-9.]+ to [0-9.]+; '
        r'worse: p &lt; 0\.05 and at least 5 % apart">'
        r"▼ worse</span> "
        r'<span class="verdict-numbers">p = 0\.029 · ratio 0\.669 \([0-9.]+\u2013[0-9.]+\)</span>',
        cells[1],
    ), cells[1]
    assert cells[2].startswith('<span class="value">100</span>')
    assert cells[3] == '<span class="missing" title="no measurement">\u2014</span>'


def test_a_logarithmic_axis_is_kept_in_the_address(client, two_engines):
    response = client.get(f"{PAGE}?{THROUGHPUT}&scale=log", headers=HTMX)
    page = client.get(f"{PAGE}?{THROUGHPUT}&scale=log").content.decode()

    assert "scale=log" in response["HX-Push-Url"]
    assert 'id="log-scale" class="secondary" aria-pressed="true"' in page
    assert '<input type="hidden" id="comparison-scale" name="scale" value="log">' in page
    linear = client.get(f"{PAGE}?{THROUGHPUT}&scale=linear").content.decode()
    assert 'id="log-scale" class="secondary" aria-pressed="false"' in linear
    assert 'name="scale" value="log" disabled>' in linear
    assert client.get(f"/api/v1/comparisons/?{THROUGHPUT}&scale=log").status_code == 200


def test_a_scale_other_than_linear_or_log_is_named(client, two_engines):
    page = client.get(f"{PAGE}?{THROUGHPUT}&scale=logarithmic").content.decode()
    api = client.get(f"/api/v1/comparisons/?{THROUGHPUT}&scale=logarithmic")

    assert "<strong>scale</strong>: &#x27;logarithmic&#x27;: one of linear, log" in page
    assert "comparison-chart" not in page
    assert api.status_code == 400
    assert "'logarithmic': one of linear, log" in json.dumps(api.json())
