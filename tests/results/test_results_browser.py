"""The results browser, /results/: facets with counts, search, sorting,
pages; htmx swaps the result region and pushes the canonical URL."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

PAGE = "/results/"
HTMX = {"HX-Request": "true"}
HOSTILE = "<img src=x onerror=alert(1)>"
MYSQL = {"engine": "mysql", "version_string": "8.0.36-0ubuntu0.22.04.1"}
PG16 = {"version_string": "PostgreSQL 16.2 on x86_64-pc-linux-gnu"}
XFS = {"filesystem": "XFS", "kind": "ssd"}
EPYC = {"cpu": "AMD EPYC 7763 64-Core Processor", "cores": 64}


def store(user, status=Submission.Status.APPROVED, **environment) -> Submission:
    document = small_document(**environment)
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def results(bob, alice):
    """Skewed: three PostgreSQL 15 runs on ext4 (one on an EPYC), one
    PostgreSQL 16 on xfs, one MySQL; alice's pending run is hers alone."""
    store(bob)
    store(bob)
    store(bob, hardware=EPYC)
    store(bob, database=PG16, storage=XFS)
    store(bob, database=MYSQL)
    store(alice, status=Submission.Status.PENDING, database=MYSQL, storage=XFS)


def facet(page: str, name: str) -> dict[str, int]:
    """{value label: count} of one facet."""
    block = page[page.index(f'id="facet-{name}"') :]
    block = block[: block.index("</details>")]
    pairs = re.findall(
        r'<span class="facet-value">(.*?)</span>\s*<span class="count">(\d+)', block, re.S
    )
    return {label: int(count) for label, count in pairs}


def run_count(page: str) -> int:
    return int(re.search(r'<h2 id="results-count" tabindex="-1">(\d+) run', page).group(1))


def test_every_dimension_has_a_facet_with_counts_of_what_the_visitor_may_see(client, results):
    page = client.get(PAGE).content.decode()

    assert run_count(page) == 5
    assert facet(page, "engine") == {"postgresql": 4, "mysql": 1}
    assert facet(page, "engineversion_major") == {
        "postgresql 15": 3,
        "postgresql 16": 1,
        "mysql 8.0": 1,
    }
    assert facet(page, "filesystem") == {"ext4": 4, "xfs": 1}
    assert facet(page, "storage_kind") == {"nvme": 4, "ssd": 1}
    assert facet(page, "cores") == {"8": 4, "64": 1}
    for name in (
        "benchmark", "version", "cpu_model", "mount_options", "io_scheduler",
        "os_distribution", "protocol", "load_engine", "source",
    ):  # fmt: skip
        assert facet(page, name), name


def test_a_facet_narrows_the_list_and_its_counts_and_says_how_to_undo_it(client, results):
    page = client.get(PAGE).content.decode()
    link = re.search(r'href="([^"]+)"[^>]*data-facet="engine\+version_major"', page)
    # the "postgresql 15" link sets both filters the API knows
    links = re.findall(
        r'href="([^"]+)" hx-get="[^"]+" hx-target="#results-region" '
        r'hx-swap="outerHTML"\s*data-facet="engine\+version_major"',
        page,
    )
    assert link and links
    pg15 = next(url for url in links if "version_major=15" in url)
    assert parse_qs(urlsplit(pg15.replace("&amp;", "&")).query) == {
        "engine": ["postgresql"],
        "version_major": ["15"],
    }

    narrowed = client.get(pg15.replace("&amp;", "&")).content.decode()

    assert run_count(narrowed) == 3
    assert facet(narrowed, "filesystem") == {"ext4": 3}
    assert "engine = postgresql" in narrowed and "clear all" in narrowed


def test_the_benchmark_facet_offers_its_run_parameters(client, results):
    page = client.get(f"{PAGE}?benchmark=select-update").content.decode()

    assert facet(page, "run_paramtransactions") == {"10000": 5}
    narrowed = client.get(f"{PAGE}?benchmark=select-update&run_param.transactions=10000")
    assert run_count(narrowed.content.decode()) == 5
    assert run_count(client.get(f"{PAGE}?run_param.transactions=5").content.decode()) == 0


def test_text_search_finds_cpu_distribution_and_version(client, results):
    assert run_count(client.get(f"{PAGE}?q=epyc").content.decode()) == 1
    assert run_count(client.get(f"{PAGE}?q=7763+amd").content.decode()) == 1
    assert run_count(client.get(f"{PAGE}?q=debian").content.decode()) == 5
    assert run_count(client.get(f"{PAGE}?q=16.2").content.decode()) == 1
    assert run_count(client.get(f"{PAGE}?q=epyc+16.2").content.decode()) == 0


def test_a_submitter_also_sees_their_pending_run(client, results, alice):
    client.force_login(alice)

    page = client.get(PAGE).content.decode()

    assert run_count(page) == 6
    assert facet(page, "engine") == {"postgresql": 4, "mysql": 2}
    assert "status-pending" in page


def test_sorting_and_pages_keep_the_filters(client, bob):
    for _ in range(30):
        store(bob)
    store(bob, database=PG16)

    first = client.get(f"{PAGE}?engine=postgresql&sort=version").content.decode()

    rows = re.findall(r'<th scope="row"><a href="/runs/(\d+)/">', first)
    assert len(rows) == 25
    assert "postgresql 16.2" in first[first.index('id="results-table"') :].split("</tr>")[1]
    assert "page 1 of 2" in first
    next_url = re.search(r'<a href="([^"]+)"[^>]*rel="next"', first).group(1).replace("&amp;", "&")
    assert parse_qs(urlsplit(next_url).query) == {
        "engine": ["postgresql"],
        "sort": ["version"],
        "page": ["2"],
    }
    second = client.get(next_url).content.decode()
    assert len(re.findall(r'<th scope="row"><a href="/runs/', second)) == 6
    assert "page 2 of 2" in second


def test_htmx_gets_the_result_region_only_and_the_canonical_url_to_push(client, results):
    # As the form sends it: an empty search, the default sort, a hidden filter.
    response = client.get(f"{PAGE}?q=&sort=newest&engine=mysql", headers=HTMX)

    fragment = response.content.decode()
    assert fragment.startswith('<div id="results-region"')
    assert 'id="results-form"' not in fragment  # the form is never replaced
    assert response.headers["HX-Push-Url"] == "/results/?engine=mysql"
    assert run_count(fragment) == 1
    # the filter travels with the next search, from inside the swapped region
    assert '<input type="hidden" form="results-form" name="engine" value="mysql">' in fragment
    # and the live region outside the swap is told what changed
    assert 'hx-swap-oob="innerHTML:#results-status">1 run with engine mysql' in fragment


def test_a_filter_the_api_refuses_is_named_and_answers_400(client, results):
    response = client.get(f"{PAGE}?colour=blue")

    assert response.status_code == 400
    assert "colour" in response.content.decode() and "unknown filter" in response.content.decode()


@pytest.mark.parametrize("headers", [{}, {"HX-Request": "true"}])
def test_a_search_with_a_null_character_is_named_and_answers_400(client, results, headers):
    """PostgreSQL text cannot hold one: the search's query raised a 500."""
    response = client.get(f"{PAGE}?q=EPYC%00", headers=headers)

    assert response.status_code == 400
    page = response.content.decode()
    assert "<strong>q</strong>: a null character is not allowed" in page


def test_a_hostile_hardware_name_stays_text_in_the_list_and_the_facets(client, bob):
    store(bob, hardware={"cpu": HOSTILE, "cores": 2}, storage={"filesystem": HOSTILE})

    page = client.get(PAGE).content.decode()

    assert "<img src=x" not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 3


def test_the_page_and_the_fragment_read_as_many_queries_for_many_runs_as_for_few(
    client, bob, django_assert_max_num_queries
):
    """Never a query per row: the facet groups (which also count the runs)
    and the dimension rows they point at, the page's run ids, the runs, one
    query per relation of theirs and one for their headlines; a search adds
    the values its words may name and a submitter lookup."""

    def queries(url: str, **headers: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url, headers=headers).status_code == 200
        return len(captured.captured_queries)

    for index in range(30):
        store(bob, hardware={"cpu": f"CPU model {index % 7}", "cores": index % 5 + 1})
    searched = f"{PAGE}?engine=postgresql&q=model"
    few = (queries(searched), queries(f"{PAGE}?benchmark=select-update&page=2", **HTMX))
    for index in range(30, 53):
        store(bob, hardware={"cpu": f"CPU model {index % 7}", "cores": index % 5 + 1})

    with django_assert_max_num_queries(few[0]):
        page = client.get(searched)
        assert "53 runs" in page.content.decode()
    with django_assert_max_num_queries(few[1]):
        page = client.get(f"{PAGE}?benchmark=select-update&page=2", headers=HTMX)
        assert "page 2 of 3" in page.content.decode()
    assert few[0] <= 20 and few[1] <= 20, few


def test_the_home_page_leads_to_a_benchmark_in_one_click(client, results):
    home = client.get("/").content.decode()

    assert 'href="/results/?benchmark=select-update"' in home
    assert 'href="/results/"' in home


def test_a_machine_of_one_core_reads_1_core(client, bob):
    store(bob, hardware={"cpu": "Intel Pentium M 1.7GHz", "cores": 1})
    store(bob, hardware={"cpu": "Intel Pentium M 1.7GHz"})

    page = client.get(PAGE).content.decode()

    assert ", 1 core</td>" in page
    assert "1 cores" not in page
    assert "? cores" in page  # unknown stays unknown


def facet_link(page: str, name: str, label: str) -> str:
    """The URL a facet value links to."""
    block = page[page.index(f'id="facet-{name}"') :]
    block = block[: block.index("</details>")]
    found = re.search(
        rf'<a href="([^"]*)"[^>]*>\s*<span class="facet-value">{re.escape(label)}</span>', block
    )
    assert found, (name, label)
    return html.unescape(found.group(1))


def test_an_empty_value_is_a_facet_value_none_that_filters_on_it(client, bob):
    """The facets skipped runs that gave no filesystem, mount options or
    version, or an empty run parameter: the pages' "(none)" had no count
    and no link, though a comparison shows it as a series."""
    without_filesystem = dict(small_document()["environment"]["storage"], filesystem="")
    store(bob, storage=without_filesystem)
    store(bob, storage=without_filesystem, hardware={"cpu": "AMD EPYC"})  # no cores
    store(bob)
    first = Run.objects.order_by("id").first()
    first.parameters["locking"] = ""
    first.save()

    page = client.get(PAGE, {"benchmark": "select-update"}).content.decode()

    assert facet(page, "filesystem") == {"(none)": 2, "ext4": 1}
    assert facet(page, "cores") == {"8": 2}  # a missing count is no value to filter on
    assert facet(page, "run_paramlocking") == {"for_update": 2, "(none)": 1}
    link = facet_link(page, "filesystem", "(none)")
    assert parse_qs(urlsplit(link).query)["filesystem"] == ["(none)"]
    narrowed = client.get(link).content.decode()
    assert run_count(narrowed) == 2
    assert facet(narrowed, "filesystem") == {"(none)": 2}
    assert re.search(
        r'class="chosen" aria-current="true">\s*<span class="facet-value">\(none\)', narrowed
    )
    only = client.get(facet_link(page, "run_paramlocking", "(none)")).content.decode()
    assert run_count(only) == 1


@pytest.mark.parametrize("spelt", ["(none)", "(NONE)", "(None)", " (none) "])
def test_none_in_any_case_marks_its_facet_value_chosen(client, bob, spelt):
    """filesystem=(NONE) filtered on the empty value, but its facet was not
    marked chosen: the mark compared the text exactly."""
    store(bob, storage=dict(small_document()["environment"]["storage"], filesystem=""))
    store(bob)

    page = client.get(PAGE, {"filesystem": spelt}).content.decode()

    assert run_count(page) == 1
    assert re.search(
        r'class="chosen" aria-current="true">\s*<span class="facet-value">\(none\)', page
    )
    assert parse_qs(urlsplit(facet_link(page, "filesystem", "(none)")).query) == {}
