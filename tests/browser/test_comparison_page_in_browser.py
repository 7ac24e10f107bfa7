import re

import pytest
from playwright.sync_api import Page, expect

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

MARIADB = {"version_string": "10.11.19-MariaDB-0+deb12u1"}
CLIENTS = (1, 2, 4, 8, 16, 20, 40, 80)

# The chart's state, read from Chart.js itself; null until the chart of the
# fragment on the page is drawn (htmx swaps the fragment, then compare.js draws)
# and until Chart.js, a deferred script, has run: a predicate that throws fails
# the wait at once instead of retrying it.
DATASETS = """() => {
  const canvas = document.getElementById("comparison-chart");
  const chart = canvas && window.Chart && Chart.getChart(canvas);
  return chart ? {type: chart.config.type,
                  labels: chart.data.datasets.map(d => d.label),
                  data: chart.data.datasets.map(d => d.data)} : null;
}"""


def chart_state(page: Page) -> dict:
    """The drawn chart, once there is one."""
    page.wait_for_function(DATASETS)
    return page.evaluate(DATASETS)


def wait_for_labels(page: Page, labels: list[str]) -> None:
    """The chart redrawn with these series, in this order (after a form change the
    URL is pushed before the new chart is drawn, so reading it at once races)."""
    page.wait_for_function(
        f"(want) => {{ const s = ({DATASETS})(); "
        "return s !== null && JSON.stringify(s.labels) === JSON.stringify(want); }",
        arg=labels,
    )


@pytest.fixture
def demo_like_data(bob):
    """The seed articles, as `load_demo_data` stores them, and a select-update
    sweep per engine like the agent uploads (the articles hold no sweep)."""
    articles_load()
    for database, scale in ((None, 1.0), (MARIADB, 0.6)):
        environment = {"database": database} if database else {}
        for metric, unit in (("throughput", "tx/s"), ("latency_mean", "ms")):
            values = {
                c: round(scale * (100 * c if metric == "throughput" else c / 2), 3) for c in CLIENTS
            }
            document = sweep_document(values, metric=metric, unit=unit, **environment)
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def test_a_sweep_is_drawn_as_lines_and_follows_the_form(live_server, page: Page, demo_like_data):
    page.goto(
        live_server.url
        + "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=engine"
    )

    expect(page.locator("#comparison-title")).to_contain_text("throughput by clients")
    chart = chart_state(page)
    assert chart["type"] == "line"
    assert chart["labels"] == ["mariadb", "postgresql"]
    assert chart["data"][1][0] == {"x": 1, "y": 100}

    page.select_option("#cmp-metric", "latency_mean")

    expect(page).to_have_url(re.compile(r"metric=latency_mean"))
    expect(page.locator("#comparison-title")).to_contain_text("latency_mean by clients")
    chart = chart_state(page)
    assert chart["labels"] == ["mariadb", "postgresql"]
    assert chart["data"][1][-1] == {"x": 80, "y": 40}
    assert page.evaluate("window.location.search").count("metric=") == 1


def test_a_seed_preset_draws_grouped_bars_and_changes_with_the_series(
    live_server, page: Page, demo_like_data
):
    page.goto(live_server.url + "/compare/")

    page.get_by_role("link", name=re.compile("sql-bench TOTALS")).click()

    expect(page).to_have_url(re.compile(r"benchmark=sql-bench.*param\.operation=TOTALS"))
    expect(page.locator("#comparison-chart")).to_be_visible()
    chart = chart_state(page)
    assert chart["type"] == "bar"
    assert chart["labels"] == ["ufs", "zfs"]
    # The article's UFS column for my-innodb-heavy-4G.cnf (152 s), not pooled
    # with its UFS+softupdates column (133 s): the preset keeps runs mounted
    # without options, one run a cell.
    expect(page).to_have_url(re.compile(r"mount_options=%28none%29"))
    innodb = page.locator("#comparison-table tbody tr").filter(
        has=page.get_by_role("rowheader", name="my-innodb-heavy-4G.cnf", exact=True)
    )
    expect(innodb.locator("td").first).to_contain_text("152")
    expect(page.locator("#comparison-table")).not_to_contain_text("n=2")

    page.select_option("#cmp-series", "")

    expect(page).not_to_have_url(re.compile(r"series="))
    wait_for_labels(page, ["seconds"])

    with page.expect_download() as download:
        page.click("#download-png")
    assert download.value.suggested_filename == "benchhub-sql-bench-seconds-by-config_profile.png"

    # Another benchmark: its own first metric; sql-bench's operation filter goes.
    page.select_option("#cmp-benchmark", "tpc-average")

    expect(page).to_have_url(re.compile(r"benchmark=tpc-average&metric=score_relative"))
    expect(page).not_to_have_url(re.compile(r"param\.operation"))
    expect(page.locator("#cmp-metric")).to_have_value("score_relative")
    wait_for_labels(page, ["score_relative"])


def test_the_raw_device_is_the_reference(live_server, page: Page, demo_like_data):
    page.goto(live_server.url + "/compare/")
    page.get_by_role("link", name=re.compile("relative to the raw device")).click()

    expect(page).to_have_url(re.compile(r"reference=raw"))
    chart = chart_state(page)
    assert chart["labels"][0] == "raw"
    assert chart["data"][0] == [100]
    expect(page.locator("#cmp-reference")).to_have_value("raw")

    # One series: nothing to be relative to, the reference goes from the URL too.
    page.select_option("#cmp-series", "")

    expect(page).not_to_have_url(re.compile(r"series=|reference="))
    expect(page.locator("#cmp-reference")).to_be_disabled()
    expect(page.locator("#comparison .notes")).to_contain_text("shown without reference")
    expect(page.locator("#comparison")).not_to_contain_text("cannot be drawn")


def test_a_hostile_series_label_stays_text(live_server, page: Page, bob):
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    for filesystem in (hostile, "ext4"):
        document = sweep_document({1: 100.0, 2: 150.0}, storage={"filesystem": filesystem})
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    page.goto(
        live_server.url
        + "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
    )

    expect(page.locator("#comparison-table thead")).to_contain_text(hostile)
    assert hostile in chart_state(page)["labels"]
    assert page.locator("#comparison img").count() == 0
    assert page.evaluate("window.pwned") is None
    # The reference select offers it as a value, as text.
    page.select_option("#cmp-reference", hostile)
    expect(page).to_have_url(re.compile(r"reference="))
    wait_for_labels(page, [hostile, "ext4"])
    assert page.evaluate("window.pwned") is None


def test_the_axes_hold_the_error_bars_and_count_whole_clients(live_server, page: Page, bob):
    """Two runs far apart: the cell's min-max bar stays inside the value axis
    (it was painted over the title and legend), in absolute and in relative
    values, and 1 and 2 clients get no tick at 1.5 clients."""
    for scale in (1, 4):
        document = sweep_document({1: 100.0 * scale, 2: 200.0 * scale})
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    axes = """() => { const c = Chart.getChart(document.getElementById("comparison-chart"));
                      return {top: c.scales.y.max, ticks: c.scales.x.ticks.map(t => t.value)}; }"""
    query = "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=engine"

    page.goto(live_server.url + query)
    chart_state(page)
    drawn = page.evaluate(axes)
    assert drawn["top"] >= 800  # the median at 2 clients is 500, its max 800
    assert drawn["ticks"] and all(float(tick).is_integer() for tick in drawn["ticks"]), drawn

    page.goto(live_server.url + query + "&reference=postgresql")
    chart_state(page)
    assert page.evaluate(axes)["top"] >= 160  # 800 is 160 % of 500


def test_on_a_phone_every_operation_name_fits_beside_its_bars(live_server, browser):
    """sql-bench's bars lie down on a phone: names like
    count_distinct_group_on_key_parts were cut at the canvas's left edge."""
    articles_load()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(
        live_server.url + "/compare/?benchmark=sql-bench&metric=seconds&x=param.operation"
        "&series=filesystem&config_profile=my-huge.cnf"
    )
    page.wait_for_function(
        "() => window.Chart && Chart.getChart(document.getElementById('comparison-chart'))"
    )

    labels = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById("comparison-chart"));
          const s = c.scales.y;
          c.ctx.save();
          c.ctx.font = Chart.helpers.toFont(s.options.ticks.font).string;
          const lines = s.ticks.flatMap(t => [].concat(t.label));
          const widest = Math.max(...lines.map(l => c.ctx.measureText(l).width));
          c.ctx.restore();
          return {horizontal: c.options.indexAxis === "y", count: s.ticks.length,
                  widest: widest, room: s.width}; }"""
    )
    context.close()

    assert labels["horizontal"] and labels["count"] > 40
    # the axis also holds its title and the ticks' padding: about 24 px
    assert labels["widest"] + 24 <= labels["room"], labels


def test_on_a_phone_a_long_pooled_value_wraps_inside_its_box(live_server, browser, bob):
    """The links that fix a pooled parameter never wrapped: a backup run's
    tool_options (--format=custom --compress=0) or protocols
    (local,tcp_loopback,services_api) ran out of the box, and the page
    scrolled sideways on a phone."""
    for protocols in ("local,tcp_loopback,services_api,named_pipe", "unix_socket"):
        document = sweep_document({1: 300.0, 20: 1500.0})
        document["runs"][0]["parameters"] = {
            "protocols": protocols,
            "tool_options": f"--format=custom --compress=0 --no-owner --protocols={protocols}",
        }
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(
        live_server.url + "/compare/?benchmark=select-update&metric=throughput&x=param.clients"
    )
    expect(page.locator("#comparison-pooled .fix-link").first).to_be_visible()

    overflow = page.evaluate(
        """() => [document.documentElement.scrollWidth,
                  ...[...document.querySelectorAll("#comparison-pooled .fix-link")].map(
                      link => Math.ceil(link.getBoundingClientRect().right))]"""
    )
    context.close()

    assert max(overflow) <= 390, overflow


def test_standing_bars_name_their_categories(live_server, page: Page):
    """Bars standing up (a few categories, a wide screen) are labelled with
    the categories themselves: the filesystems, not 0, 1, 2 … (an explicit
    ``callback: undefined`` had replaced Chart.js's own labels)."""
    articles_load()
    page.goto(
        live_server.url + "/compare/?benchmark=tpcb&metric=tps_relative&x=filesystem"
        "&series=io_scheduler&os_distribution=centos"
    )
    page.wait_for_function(
        "() => window.Chart && Chart.getChart(document.getElementById('comparison-chart'))"
    )
    drawn = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById("comparison-chart"));
          return {horizontal: c.options.indexAxis === "y", categories: c.data.labels,
                  ticks: c.scales.x.ticks.map(t => t.label)}; }"""
    )

    assert not drawn["horizontal"], drawn
    assert len(drawn["categories"]) > 1 and all(
        not label.isdigit() for label in drawn["categories"]
    ), drawn
    assert drawn["ticks"] == drawn["categories"], drawn


# The value axis as Chart.js drew it: its type and its lowest tick.
VALUE_AXIS = """() => {
  const chart = Chart.getChart(document.getElementById("comparison-chart"));
  const axis = chart.options.indexAxis === "y" ? chart.scales.x : chart.scales.y;
  return {type: axis.type, min: axis.min};
}"""


def test_the_value_axis_turns_logarithmic_and_the_address_and_the_form_keep_it(
    live_server, page: Page, demo_like_data
):
    page.goto(
        live_server.url
        + "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=engine"
    )
    chart_state(page)
    assert page.evaluate(VALUE_AXIS)["type"] == "linear"
    toggle = page.locator("#log-scale")
    expect(toggle).to_have_attribute("aria-pressed", "false")

    toggle.click()

    expect(page.locator("#log-scale")).to_have_attribute("aria-pressed", "true")
    axis = page.evaluate(VALUE_AXIS)
    assert axis["type"] == "logarithmic"
    assert axis["min"] > 0  # MariaDB's 60 tx/s at one client, not a linear axis' 0
    assert "scale=log" in page.url

    page.reload()  # a shared address draws what its sender saw
    chart_state(page)
    assert page.evaluate(VALUE_AXIS)["type"] == "logarithmic"
    expect(page.locator("#log-scale")).to_have_attribute("aria-pressed", "true")

    page.select_option("#cmp-metric", "latency_mean")
    expect(page.locator("#comparison-title")).to_contain_text("latency_mean by clients")
    page.wait_for_function(
        "() => { const c = Chart.getChart(document.getElementById('comparison-chart'));"
        " return c && c.options.plugins.title.text.includes('latency_mean')"
        " && c.scales.y.type === 'logarithmic'; }"
    )
    expect(page.locator("#log-scale")).to_have_attribute("aria-pressed", "true")
    page.wait_for_url("**metric=latency_mean**")
    assert "scale=log" in page.url  # the answer's pushed address

    page.locator("#log-scale").click()
    assert page.evaluate(VALUE_AXIS)["type"] == "linear"
    assert "scale=" not in page.url


def test_runs_side_by_side_draw_a_chart_that_downloads_as_a_png(live_server, page: Page, bob):
    runs = []
    for values in ({1: 402.0, 8: 1506.0}, {1: 301.0, 8: 1720.0, 32: 1100.0}):
        document = sweep_document(values)
        outcome = submission_create(
            submitter=bob, document=document, status=Submission.Status.APPROVED
        )
        runs.append(outcome.submission.runs.get().pk)
    page.goto(f"{live_server.url}/runs/compare/?run={runs[0]}&run={runs[1]}")

    page.wait_for_function(
        "() => { const c = document.getElementById('runs-chart'); return c && Chart.getChart(c); }"
    )
    drawn = page.evaluate(
        "() => Chart.getChart(document.getElementById('runs-chart')).data.datasets.map(d => d.data)"
    )
    assert drawn[0] == [100, 100]
    assert drawn[1] == pytest.approx([100 * 301.0 / 402.0, 100 * 1720.0 / 1506.0])
    with page.expect_download() as download:
        page.locator("#runs-download-png").click()
    assert download.value.suggested_filename == f"runs-{runs[0]}-{runs[1]}.png"
    assert download.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
