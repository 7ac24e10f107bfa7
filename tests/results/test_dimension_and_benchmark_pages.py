"""Pages of one CPU model, one filesystem, one database version, and of a
benchmark: every visible result on it, summarized per benchmark."""

from __future__ import annotations

import re
import statistics

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document

HOSTILE = "<img src=x onerror=alert(1)>"
EPYC = {"cpu": "AMD EPYC 7763 64-Core Processor", "cores": 64}
PG16 = {"version_string": "PostgreSQL 16.2 on x86_64-pc-linux-gnu"}
XFS = {"filesystem": "XFS", "kind": "ssd"}


def store(user, values, status=Submission.Status.APPROVED, **environment) -> Submission:
    document = sweep_document(values, **environment)
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def results(bob, alice):
    """On the example's ext4 and Ryzen: PostgreSQL 15 three times (skewed:
    one far above), PostgreSQL 16 once; one run on an EPYC with xfs; a
    pending run of alice's that only she may see."""
    store(bob, {1: 300.0, 20: 1500.0})
    store(bob, {1: 310.0, 20: 1550.0})
    store(bob, {1: 900.0, 20: 9000.0})
    store(bob, {1: 500.0, 20: 2500.0}, database=PG16)
    store(bob, {1: 100.0, 20: 700.0}, hardware=EPYC, storage=XFS)
    store(alice, {1: 1.0, 20: 2.0}, status=Submission.Status.PENDING, hardware={"cpu": "Secret 9"})


def spread_cells(page: str, benchmark: str) -> dict[str, list[str]]:
    """{row label: [median per point]} of a benchmark's summary table."""
    table = page[page.index(f'id="spread-{benchmark}"') :]
    table = table[: table.index("</table>")]
    rows = {}
    for label, cells in re.findall(r'<th scope="row">(.*?)</th>(.*?)</tr>', table, re.S):
        rows[label] = re.findall(r'<span class="value">(.*?)</span>', cells)
    return rows


def test_a_filesystem_page_summarizes_every_visible_result_on_it(client, results):
    page = client.get("/filesystems/EXT4/").content.decode()  # spelt as people type it

    assert "Filesystem: ext4" in page
    assert "4 published runs on ext4" in page
    assert spread_cells(page, "select-update") == {
        "postgresql 15": ["310", "1550"],  # medians of 300/310/900 and 1500/1550/9000
        "postgresql 16": ["500", "2500"],
    }
    assert "n=3, 1500\u20139000" in page
    assert 'href="/results/?filesystem=ext4"' in page
    compare = re.search(r'href="(/compare/[^"]+)" class="compare-link"', page).group(1)
    assert "x=param.clients" in compare and "series=filesystem" in compare


def test_a_cpu_page_and_a_version_page(client, results):
    cpu = client.get("/cpus/EPYC 7763/").content.decode()
    assert "1 published run on EPYC 7763" in cpu
    assert spread_cells(cpu, "select-update") == {"postgresql 15": ["100", "700"]}

    version = client.get("/servers/PostgreSQL/16.2/").content.decode()
    assert "Database version: postgresql 16.2" in version
    assert spread_cells(version, "select-update") == {"postgresql 16": ["500", "2500"]}


def test_the_run_page_links_its_dimension_pages_and_they_answer(client, results):
    run = Submission.objects.filter(status="approved").first().runs.get()

    page = client.get(f"/runs/{run.pk}/").content.decode()

    for href in re.findall(r'href="(/(?:cpus|filesystems|servers)/[^"]+)"', page):
        assert client.get(href).status_code == 200, href
    assert len(re.findall(r'href="/(?:cpus|filesystems|servers)/', page)) == 3
    assert 'href="/benchmarks/select-update/"' in page


def test_a_pending_machine_has_no_page_for_the_public_but_has_one_for_its_submitter(
    client, results, alice
):
    assert client.get("/cpus/Secret 9/").status_code == 404
    assert client.get("/cpus/Nothing Like It/").status_code == 404
    client.force_login(alice)
    assert client.get("/cpus/Secret 9/").status_code == 200


def test_a_moderator_reviewing_a_pending_run_is_not_linked_to_pages_that_do_not_show_it(
    client, results
):
    """A dimension page shows the public's runs and the viewer's own: the
    moderator's Secret 9 link answered 404."""
    from django.contrib.auth.models import User

    from benchhub.accounts.roles import role_grant

    moderator = User.objects.create_user(username="maud")
    role_grant(user=moderator, role="moderator")
    client.force_login(moderator)
    pending = Submission.objects.get(status="pending").runs.get()

    page = client.get(f"/runs/{pending.pk}/").content.decode()

    assert "Secret 9" in page
    assert re.findall(r'href="(/(?:cpus|filesystems|servers)/[^"]+)"', page) == []


@pytest.mark.parametrize(
    "path",
    ["/cpus/EPYC%00/", "/filesystems/x%00fs/", "/servers/postgresql/16%00/", "/servers/%00/16/"],
)
def test_a_dimension_named_with_a_null_character_is_not_found(client, results, path):
    """No stored name holds one (PostgreSQL text cannot): the lookup raised a 500."""
    assert client.get(path).status_code == 404
    assert client.get(path, headers={"HX-Request": "true"}).status_code == 404


def test_the_benchmark_page_says_what_it_measures_where_from_its_spread_and_how_to_run_it(
    client, results
):
    page = client.get("/benchmarks/select-update/").content.decode()

    assert "SELECT + UPDATE + COMMIT" in page and "Committed transactions per second" in page
    assert "seed 004" in page
    assert "<code>transactions=10000</code>" in page
    cells = spread_cells(page, "select-update")
    assert cells["postgresql 15"] == ["305", "1525"]  # 4 runs: 100, 300, 310, 900
    assert cells["postgresql 16"] == ["500", "2500"]
    assert "pip install './agents[postgresql,mysql]'" in page
    assert re.search(
        r"benchhub-agent run --like http://testserver/api/v1/runs/\d+/"
        r" --dsn postgresql://postgres@127\.0\.0\.1:5432/bench",
        page,
    )
    assert client.get("/benchmarks/no-such-thing/").status_code == 404


def test_the_benchmark_page_claims_a_seed_article_only_for_a_benchmark_from_one(client, db):
    """sysbench's origin is "imported tool": its page read "From the seed
    article (imported tool)", and one cited article read "seed articles"."""
    articles_load()

    sysbench = client.get("/benchmarks/sysbench/").content.decode()
    select_update = client.get("/benchmarks/select-update/").content.decode()
    backup = client.get("/benchmarks/backup/").content.decode()

    assert "seed article" not in sysbench
    assert "<p>Origin: imported tool.</p>" in sysbench
    assert re.search(r"From the seed article \(seed 004\):\s+<cite", select_update)
    assert re.search(r"From the seed articles \(seeds 000, 001\):\s+<cite", backup)


def test_a_hostile_hardware_name_is_text_on_the_dimension_pages(client, bob):
    store(bob, {1: 1.0}, hardware={"cpu": HOSTILE, "cores": 1}, storage={"filesystem": HOSTILE})

    run = Submission.objects.get().runs.get()
    page = client.get(f"/runs/{run.pk}/").content.decode()
    urls = re.findall(r'href="(/(?:cpus|filesystems)/[^"]+)"', page)
    assert len(urls) == 2
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        shown = response.content.decode()
        assert "<img src=x" not in shown
        assert "&lt;img src=x onerror=alert(1)&gt;" in shown


def test_dimension_and_benchmark_pages_read_a_fixed_number_of_queries(client, bob):
    def counts() -> tuple[int, int]:
        found = []
        for url in ("/filesystems/ext4/", "/benchmarks/select-update/"):
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            found.append(len(captured.captured_queries))
        return found[0], found[1]

    for index in range(2):
        store(bob, {c: 100.0 * c + index for c in (1, 2, 4)})
    few = counts()
    for index in range(30):
        store(bob, {c: 100.0 * c + index * 1.5 for c in (1, 2, 4, 8, 16, 32, 64)})

    # No query per run or measurement: the dimension page reads the latest
    # runs' ids, the 25 shown and their 7 relations, the metrics and their
    # names, the spread; the benchmark page its metrics, the runs' ids, the
    # spread, the parameter sets, the citations, who measured the latest run.
    dimension, benchmark = counts()
    assert (dimension, benchmark) == few
    assert dimension <= 14 and benchmark <= 11


def test_a_dimension_page_summarizes_its_latest_runs_and_says_so(client, bob, monkeypatch):
    for value in (100.0, 200.0, 9000.0):
        store(bob, {1: value})
    monkeypatch.setattr("benchhub.results.views.SUMMARY_RUNS", 2)

    page = client.get("/filesystems/ext4/").content.decode()

    assert "From the latest 2 of the 3 runs" in page
    # the two latest: 200 and 9000, median 4600; the oldest (100) left out
    assert spread_cells(page, "select-update") == {"postgresql 15": ["4600"]}


def test_the_pooled_mark_is_explained_under_the_table_that_has_one(client, bob):
    """The "≈" legend stood under every dimension page's tables, where no
    cell had the mark, and under none on the benchmark page, where one had."""
    store(bob, {1: 300.0, 20: 1500.0})
    assert "≈" not in client.get("/filesystems/ext4/").content.decode()

    pooled = sweep_document({1: 320.0})
    pooled["runs"][0]["measurements"][0]["parameters"]["rows"] = 1000
    submission_create(submitter=bob, document=pooled, status=Submission.Status.APPROVED)

    for page in ("/filesystems/ext4/", "/benchmarks/select-update/"):
        html = client.get(page).content.decode()
        assert '<span class="value">≈310</span>' in html
        assert "≈: measurements that differ in another parameter are pooled" in html


def test_a_pooled_cell_shows_the_median_of_all_its_values_not_a_mean_of_medians(client, bob):
    """Issue 27: alter_table_add's 2, 2, 3, 3, 3, 4, 4, 4, 4 showed 3.22222 (a mean)
    where the median is 3. Here two iteration counts split the nine values
    unevenly: a weighted mean of the two groups' medians would say 3.33."""
    groups = {100: [2.0, 3.0, 2.0], 200: [4.0, 3.0, 4.0, 4.0, 3.0, 4.0]}
    for iterations, values in groups.items():
        for value in values:
            document = sql_bench_document({"alter_table_add": value}, "ext4")
            document["runs"][0]["measurements"][0]["parameters"]["iterations"] = iterations
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    every = sorted(v for values in groups.values() for v in values)

    for page in ("/filesystems/ext4/", "/benchmarks/sql-bench/"):
        html = client.get(page).content.decode()
        (cells,) = spread_cells(html, "sql-bench").values()
        assert cells == [f"≈{statistics.median(every):g}"], page
        assert f"n={len(every)}, 2\u20134" in html
