"""The result pages in Chromium, as a newcomer meets them: every page has
no serious or critical axe-core violation at 1440 and 390 px and never
scrolls sideways on a phone; the results browser filters in place; the run
page draws its sweep and says where it stands; a hostile hardware name is
text everywhere. A page that fails the axe or width check is kept as a screenshot
under var/artifacts/browse/, to look at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from benchhub.baselines.services import baselines_refresh
from benchhub.imports.services import articles_load
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = settings.BASE_DIR / "var" / "artifacts" / "browse"
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
HOSTILE = "<img src=x onerror=alert(1)>"
WIDTHS = (1440, 390)


@pytest.fixture
def published(bob) -> dict[str, str]:
    """The seed articles, five PostgreSQL 15 select-update sweeps on ext4
    with their baselines, and one run whose machine is named like an
    attack. Returns the pages to visit, by name."""
    articles_load()
    runs = []
    for index, scale in enumerate((1.0, 0.9, 1.2, 0.7, 1.05)):
        document = example_document()
        for measurement in document["runs"][0]["measurements"]:
            measurement["value"] = round(measurement["value"] * scale, 3)
            measurement["samples"] = [round(s * scale, 3) for s in measurement.get("samples", [])]
        if index == 4:
            document["environment"]["hardware"] = {"cpu": HOSTILE, "cores": 4}
        outcome = submission_create(
            submitter=bob, document=document, status=Submission.Status.APPROVED
        )
        runs.append(outcome.runs[0] if outcome.runs else outcome.submission.runs.get())
    baselines_refresh()
    sql_bench = Run.objects.filter(benchmark__name="sql-bench").first()
    hostile = runs[4]
    cpu = Run.objects.get(pk=runs[0].pk).hardware.cpu_model
    return {
        "home": "/",
        "results": "/results/",
        "results-filtered": "/results/?engine=postgresql&version_major=15&filesystem=ext4",
        "run": f"/runs/{runs[2].pk}/",
        "run-sql-bench": f"/runs/{sql_bench.pk}/",
        "run-hostile": f"/runs/{hostile.pk}/",
        "submission": f"/submissions/{hostile.submission.uuid}/",
        "benchmark": "/benchmarks/select-update/",
        "benchmark-sql-bench": "/benchmarks/sql-bench/",
        "cpu": f"/cpus/{cpu}/",
        "filesystem": "/filesystems/ext4/",
        "version": "/servers/postgresql/15.18/",
        "compare": "/compare/?benchmark=select-update&metric=throughput&x=param.clients"
        "&series=cpu_model",
        "compare-sql-bench": "/compare/?benchmark=sql-bench&metric=seconds&x=param.operation"
        "&series=filesystem&config_profile=my-huge.cnf",
        "search": "/results/?q=postgresql+15+ext4+redis&sort=headline",
        "leaderboard": "/benchmarks/select-update/leaderboard/",
        "leaderboard-sql-bench": "/benchmarks/sql-bench/leaderboard/",
        "runs-side-by-side": f"/runs/compare/?run={runs[0].pk}&run={runs[1].pk}&run={hostile.pk}",
        "changes": "/changes/?engine=mysql&from=5.0&to=5.1",
        "history": "/benchmarks/select-update/history/?engine=postgresql",
        "history-log": "/benchmarks/select-update/history/?engine=postgresql&scale=log",
    }


def axe_violations(page: Page) -> list[str]:
    # evaluated by the test's driver, not added as an inline <script>: the page's
    # Content-Security-Policy refuses inline script, axe's included
    page.evaluate(AXE.read_text())
    result = page.evaluate(
        """async () => {
          const r = await axe.run(document, {resultTypes: ["violations"]});
          return r.violations
            .filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => v.id + " (" + v.impact + "): "
                 + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "));
        }"""
    )
    return result


def visit(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("width", WIDTHS)  # one test per width: two workers share them
def test_every_page_passes_axe_and_never_scrolls_sideways_on_a_phone(
    live_server, browser, published, width
):
    problems: list[str] = []
    dialogs: list[str] = []
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for name, path in published.items():
        visit(page, live_server.url + path)
        found = [f"{name} at {width}px: {violation}" for violation in axe_violations(page)]
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if overflow > 0:
            found.append(f"{name} at {width}px scrolls sideways by {overflow}px")
        if found:  # the page as the test saw it, to look at
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        problems += found
    context.close()
    assert problems == [], "\n".join(problems)
    assert dialogs == [], "a user-supplied string ran as script"


def test_a_hostile_hardware_name_is_text_on_every_page_that_shows_it(
    live_server, page: Page, published
):
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for name in ("results", "run-hostile", "submission", "compare"):
        visit(page, live_server.url + published[name])
        assert HOSTILE in page.locator("main").inner_text(), name
        assert page.locator("main img[src=x]").count() == 0, name
    # the CPU page reached from the run page's link
    visit(page, live_server.url + published["run-hostile"])
    page.locator("#environment a[href^='/cpus/']").click()
    expect(page.locator("h1")).to_contain_text(HOSTILE)
    assert dialogs == []


def test_filtering_the_results_changes_the_list_and_the_url_in_place(
    live_server, page: Page, published
):
    visit(page, live_server.url + "/")
    page.get_by_role("link", name="select-update", exact=True).click()
    expect(page).to_have_url(re.compile(r"/results/\?benchmark=select-update$"))
    # htmx is a deferred script: a facet clicked before it has run is a plain
    # link, and the page reloads (seen in CI on a loaded machine)
    page.wait_for_load_state("load")
    page.evaluate("window.notReloaded = true")
    before = page.locator("#results-count").inner_text()

    page.locator("[data-facet='engine+version_major']", has_text="postgresql 15").click()
    expect(page).to_have_url(re.compile(r"engine=postgresql&version_major=15"))
    page.locator("[data-facet='filesystem']", has_text="ext4").click()

    expect(page).to_have_url(re.compile(r"engine=postgresql&version_major=15&filesystem=ext4"))
    expect(page.locator("#results-count")).to_have_text("5 runs")
    assert before != "5 runs"
    assert page.evaluate("window.notReloaded") is True  # htmx swapped the list only
    expect(page.locator("#results-status")).to_contain_text("5 runs with")
    # the search box keeps the filters, typed as fast as one types
    page.click("#results-q")
    page.keyboard.type("ryzen", delay=20)
    expect(page).to_have_url(re.compile(r"filesystem=ext4&q=ryzen"))
    expect(page.locator("#results-count")).to_contain_text("4 runs")
    assert page.input_value("#results-q") == "ryzen"
    # back restores the previous state
    page.go_back()
    expect(page).to_have_url(re.compile(r"filesystem=ext4$"))
    # and the URL alone shows the same to anybody
    page.goto(page.url)
    expect(page.locator("#results-count")).to_have_text("5 runs")


def test_signing_in_after_filtering_in_place_comes_back_to_the_filtered_list(
    live_server, page: Page, published, bob
):
    """htmx changes the address, not the header: its Sign in link still
    pointed at the list as first loaded."""
    bob.set_password("a long enough passphrase 42")
    bob.save()
    visit(page, live_server.url + "/results/?benchmark=select-update")
    page.locator("[data-facet='engine+version_major']", has_text="postgresql 15").click()
    expect(page).to_have_url(re.compile(r"engine=postgresql&version_major=15"))
    filtered = page.url

    page.click("header >> text=Sign in")
    page.fill("#id_username", "bob")
    page.fill("#id_password", "a long enough passphrase 42")
    page.click("button:has-text('Sign in')")

    expect(page).to_have_url(filtered)
    expect(page.locator("header")).to_contain_text("bob")


def test_the_run_page_draws_its_sweep_and_says_where_it_stands(
    live_server, page: Page, published, settings
):
    settings.RANK_MIN_RESULTS = 1  # the rank drawn among the few published runs
    visit(page, live_server.url + published["run"])

    chart = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById("run-chart"));
                   return {type: c.config.type, data: c.data.datasets[0].data}; }"""
    )
    assert chart["type"] == "line"
    xs = [point["x"] for point in chart["data"]]
    assert xs == sorted(xs) and xs[0] == 1 and len(xs) == 9
    throughput = page.locator("#measurements tbody tr").first
    expect(throughput).to_contain_text("throughput")
    # this run is the fastest of five: better than all 4 others
    expect(page.locator("#headline-percentile")).to_have_text("100%")
    expect(page.locator("#headline-standing")).to_contain_text("n=5")
    # another metric from the select redraws the chart
    page.select_option("#run-chart-metric", index=1)  # the catalog's second metric
    page.wait_for_function(
        "() => Chart.getChart(document.getElementById('run-chart')).options.plugins.title.text"
        ".includes('latency_mean')"
    )
    expect(page.locator("#reproduce-command")).to_have_text(
        re.compile(r"^benchhub-agent run --like http://.+/api/v1/runs/\d+/ --dsn \S+$")
    )
    compare = page.locator("#compare-like")
    compare.click()
    expect(page).to_have_url(re.compile(r"/compare/\?benchmark=select-update"))
    # the new page's deferred scripts may not have run yet: wait for Chart.js too,
    # a predicate that throws fails the wait instead of retrying it
    page.wait_for_function(
        "() => window.Chart && Chart.getChart(document.getElementById('comparison-chart'))"
    )


def test_the_japanese_title_of_seed_004_carries_its_language(live_server, page: Page, published):
    visit(page, live_server.url + "/")

    title = page.locator("cite[lang=ja]", has_text="基本性能ベンチマークテスト")
    expect(title).to_have_count(1)
    # rendered with a CJK font, not as boxes (fonts-noto-cjk, .ci/ensure-browser.sh)
    width = title.evaluate(
        """e => { const c = document.createElement("canvas").getContext("2d");
                  c.font = getComputedStyle(e).font;
                  const boxes = "\\u{10FFFD}".repeat(e.textContent.length);
                  return [c.measureText(e.textContent).width, c.measureText(boxes).width]; }"""
    )
    assert width[0] != width[1], "the title is drawn with the missing-glyph box"
    title.screenshot(path=str(ARTIFACTS / "seed-004-title.png"))


def test_the_api_documentation_fetches_nothing_from_outside(live_server, page: Page):
    outside: list[str] = []

    def only_loopback(route) -> None:
        url = route.request.url
        if url.startswith(("data:", "blob:", live_server.url)):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", only_loopback)
    visit(page, live_server.url + "/api/docs/")

    expect(page.get_by_text("BenchHub API").first).to_be_visible()
    assert outside == []


def test_the_keyboard_alone_reaches_a_run_with_visible_focus(live_server, page: Page, published):
    visit(page, live_server.url + published["results-filtered"])

    outlines = []
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('href')") == "#results-count":
            break
    page.keyboard.press("Enter")  # skip the filters
    for _ in range(20):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => { const e = document.activeElement;
                       const s = getComputedStyle(e);
                       return {href: e.getAttribute("href") || "", tag: e.tagName,
                               outline: s.outlineStyle,
                               width: parseFloat(s.outlineWidth)}; }"""
        )
        outlines.append(focused)
        if re.match(r"^/runs/\d+/$", focused["href"]):
            break
    assert re.match(r"^/runs/\d+/$", outlines[-1]["href"]), "no run link reached by Tab"
    assert [f for f in outlines if f["outline"] == "none" or f["width"] < 2] == []
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#environment")).to_be_visible()


def test_on_a_phone_the_results_come_before_the_folded_filters(live_server, browser, published):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    visit(page, live_server.url + "/results/?benchmark=select-update")

    filters = page.locator("#results-filters")
    # folded into one line, and the first result is on the first screen
    assert filters.get_attribute("open") is None
    expect(page.locator("[data-facet='filesystem']").first).to_be_hidden()
    first_run = page.locator("#results-table a[href^='/runs/']").first
    assert first_run.bounding_box()["y"] < 844
    page.screenshot(path=str(ARTIFACTS / "results-phone-folded.png"))
    # the keyboard unfolds them (the summary is a native control)
    page.locator("#results-filters > summary").focus()
    page.keyboard.press("Enter")
    expect(page.locator("[data-facet='filesystem']").first).to_be_visible()
    # two filters in a row: they stay unfolded while the list changes under them
    page.locator("[data-facet='engine+version_major']", has_text="postgresql 15").click()
    expect(page).to_have_url(re.compile(r"version_major=15"))
    expect(filters).to_have_attribute("open", "")
    page.locator("[data-facet='filesystem']", has_text="ext4").click()
    expect(page).to_have_url(re.compile(r"version_major=15&filesystem=ext4"))
    expect(page.locator("#results-count")).to_have_text("5 runs")
    page.screenshot(path=str(ARTIFACTS / "results-phone-filters-open.png"))
    # and one tap leads back to the list
    page.locator(".filters-done a").click()
    assert page.locator("#results-count").bounding_box()["y"] < 100
    context.close()


def test_on_a_wide_screen_the_filters_are_a_column_with_nothing_to_unfold(
    live_server, page: Page, published
):
    page.set_viewport_size({"width": 1440, "height": 900})
    visit(page, live_server.url + "/results/")

    expect(page.locator("#results-filters > summary")).to_be_hidden()
    expect(page.locator("[data-facet='benchmark']").first).to_be_visible()
    facets = page.locator("nav.facets").bounding_box()
    results = page.locator("#results-count").bounding_box()
    assert facets["x"] + facets["width"] <= results["x"]  # side by side
    assert abs(facets["y"] - results["y"]) < 40


def test_the_folded_filters_work_without_javascript(live_server, browser, published):
    context = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/results/")

    page.locator("#results-filters > summary").click()
    page.locator("[data-facet='filesystem']", has_text="ext4").click()

    expect(page).to_have_url(re.compile(r"/results/\?filesystem=ext4$"))
    expect(page.locator("#results-count")).to_contain_text("runs")
    context.close()


def test_a_newcomer_finds_a_run_copies_its_command_and_shares_its_comparison(
    live_server, browser, published
):
    """The issue's "done means", end to end: three clicks from the home page
    to PostgreSQL 15 on ext4, select-update; a run with its environment and
    standing; the reproduce command on the clipboard; a comparison link
    that shows anybody the same chart."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    visit(page, live_server.url + "/")

    page.get_by_role("link", name="select-update", exact=True).click()
    page.locator("[data-facet='engine+version_major']", has_text="postgresql 15").click()
    expect(page).to_have_url(re.compile(r"version_major=15$"))  # the list changes
    page.locator("[data-facet='filesystem']", has_text="ext4").click()
    expect(page).to_have_url(
        re.compile(
            r"/results/\?benchmark=select-update&engine=postgresql&version_major=15&filesystem=ext4$"
        )
    )
    expect(page.locator("#results-count")).to_have_text("5 runs")

    page.locator("#results-table a[href^='/runs/']").first.click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.locator("#environment")).to_contain_text("ext4")
    expect(page.locator("#headline-standing")).to_contain_text("n=5")

    page.locator("button[data-copy='reproduce-command']").click()
    expect(page.locator("#reproduce-command-status")).to_have_text("Copied to the clipboard.")
    command = page.locator("#reproduce-command").inner_text()
    assert command.startswith("benchhub-agent run --like ")
    assert page.evaluate("navigator.clipboard.readText()") == command

    page.locator("#compare-like").click()
    expect(page).to_have_url(re.compile(r"/compare/\?.*filesystem=ext4"))
    chart = (
        "() => { const c = window.Chart && Chart.getChart(document.getElementById("
        "'comparison-chart')); return c ? c.data.datasets.map(d => [d.label, d.data]) : null; }"
    )
    page.wait_for_function(chart)
    drawn = page.evaluate(chart)
    shared = page.url
    assert drawn and all(len(points) == 9 for _, points in drawn)

    stranger = browser.new_context(viewport={"width": 390, "height": 844})
    other = stranger.new_page()
    other.goto(shared)
    other.wait_for_function(chart)
    assert other.evaluate(chart) == drawn
    stranger.close()
    context.close()
    assert errors == []


def test_the_copy_button_works_where_the_clipboard_api_does_not_exist(
    live_server, browser, published
):
    """A site on a closed network is often plain http://, where browsers
    give no navigator.clipboard: the button falls back to the copy command."""
    context = browser.new_context()
    page = context.new_page()
    page.add_init_script("Object.defineProperty(navigator, 'clipboard', {value: undefined})")
    visit(page, live_server.url + published["run"])

    page.locator("button[data-copy='reproduce-command']").click()

    expect(page.locator("#reproduce-command-status")).to_have_text("Copied to the clipboard.")
    expect(page.locator("button[data-copy='reproduce-command']")).to_be_focused()
    context.close()


def test_the_run_charts_axes_hold_its_points_whiskers_and_count_whole_clients(
    live_server, page: Page, bob
):
    """A repetition far above the median: its whisker stays inside the value
    axis (it was painted over the title), and 1 and 2 clients get no tick
    at 1.5 clients."""
    document = sweep_document({1: 100.0, 2: 200.0})
    for measurement, samples in zip(
        document["runs"][0]["measurements"],
        ([90.0, 100.0, 400.0], [150.0, 200.0, 800.0]),
        strict=True,
    ):
        measurement["samples"] = samples
    outcome = submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    visit(page, f"{live_server.url}/runs/{outcome.submission.runs.get().pk}/")

    axes = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById("run-chart"));
                   return {top: c.scales.y.max, right: c.scales.x.max,
                           ticks: c.scales.x.ticks.map(t => t.value)}; }"""
    )
    assert axes["top"] >= 800
    assert axes["right"] > 2  # the last point whole, not cut in half by the edge
    assert axes["ticks"] and all(float(tick).is_integer() for tick in axes["ticks"]), axes


def test_a_submissions_long_command_wraps_on_a_phone(live_server, browser, bob):
    """A DSN is one word to the browser: the summary table grew to its
    width and the command ran out of the phone's screen."""
    document = example_document()
    document["source"]["command"] = (
        "benchhub-agent run select-update --dsn mysql://USER@HOST:3306/a_rather_long_database"
        "_name_for_benchmarks --clients 1,2,4,8,16,32 --transactions 10000 --repeat 5"
    )
    submission = submission_create(
        submitter=bob, document=document, status=Submission.Status.APPROVED
    ).submission
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()

    page.goto(f"{live_server.url}/submissions/{submission.uuid}/")

    summary = page.locator("#submission-summary")
    expect(summary).to_contain_text("a_rather_long_database")
    assert summary.evaluate("e => e.parentElement.scrollWidth <= e.parentElement.clientWidth")
    context.close()
