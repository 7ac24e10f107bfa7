"""The results search box reads words as a person means them: "postgresql 15
ext4 epyc" is an engine, a version of it, a filesystem and a CPU; each word
shows as a chip that drops it, and a search that finds nothing says why."""

from __future__ import annotations

import html
import re

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, small_document

PAGE = "/results/"
HTMX = {"HX-Request": "true"}
EPYC = {"cpu": "AMD EPYC 7763 64-Core Processor", "cores": 64}
XEON = {"cpu": "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "cores": 24}


def storage(filesystem: str, options: str = "rw,relatime") -> dict:
    section = dict(example_document()["environment"]["storage"])
    return {**section, "filesystem": filesystem, "mount_options": options}


def server(version_string: str, engine: str = "postgresql") -> dict:
    return {"engine": engine, "version_string": version_string, "config_profile": "default"}


PG15 = server("PostgreSQL 15.18 on x86_64-pc-linux-gnu")
PG16 = server("PostgreSQL 16.2 on x86_64-pc-linux-gnu")
MARIADB_114 = server("11.4.3-MariaDB-1", "mariadb")
MARIADB_1011 = server("10.11.9-MariaDB-0+deb12u1", "mariadb")
MYSQL8 = server("8.0.36-0ubuntu0.22.04.1", "mysql")


def store(user, status=Submission.Status.APPROVED, **environment) -> None:
    submission_create(submitter=user, document=small_document(**environment), status=status)


@pytest.fixture
def results(bob, alice):
    """Seven approved runs, uneven on purpose, and alice's pending one on zfs."""
    store(bob, database=PG15, storage=storage("ext4", "noatime"), hardware=EPYC)
    store(bob, database=PG15, storage=storage("ext4"), hardware=XEON)
    store(bob, database=PG15, storage=storage("xfs", "noatime"), hardware=XEON)
    store(bob, database=PG16, storage=storage("xfs"), hardware=EPYC)
    store(bob, database=MARIADB_114, storage=storage("xfs"), hardware=XEON)
    store(bob, database=MARIADB_1011, storage=storage("ext4", "noatime"), hardware=XEON)
    store(bob, database=MYSQL8, storage=storage("ext4"), hardware=XEON)
    store(alice, status=Submission.Status.PENDING, database=PG15, storage=storage("zfs"))


def run_count(page: str) -> int:
    return int(re.search(r'<h2 id="results-count" tabindex="-1">(\d+) run', page).group(1))


def chips(page: str) -> dict[str, str]:
    """{chip label: the URL that drops its word}."""
    block = page[page.index('aria-label="The search, word by word"') :]
    block = block[: block.index("</ul>")]
    found = re.findall(r'<a href="([^"]+)"[^>]*>([^<]+?) <span aria-hidden', block)
    return {html.unescape(label): html.unescape(url) for url, label in found}


def search(client, text: str, **headers) -> str:
    return client.get(PAGE, {"q": text}, headers=headers).content.decode()


def test_an_engine_a_version_a_filesystem_and_a_cpu_word_each_narrow(client, results):
    page = search(client, "postgresql 15 ext4 epyc")

    assert run_count(page) == 1
    assert list(chips(page)) == [
        "engine: postgresql",
        "version: 15",
        "filesystem: ext4",
        "CPU, OS or version text: epyc",
    ]


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("postgresql", 4),
        ("postgres 15", 3),  # a spelling people use
        ("PostgreSQL 16", 1),
        ("xfs noatime", 1),
        ("ext4 xfs", 7),  # two values of one facet: either
        ("mariadb 11", 1),  # 11.4 only: a major that starts with the number
        ("mariadb 10", 1),  # 10.11, not 11.4
        ("mariadb", 2),
        ("mysql 8.0", 1),
        ("xeon noatime", 2),
        ("amd", 2),  # the CPU vendor
        ("16.2", 1),  # a whole version
        ("bob", 7),  # the submitter
    ],
)
def test_words_read_as_facets(client, results, text, count):
    assert run_count(search(client, text)) == count


def test_a_number_is_a_version_of_the_engine_named_before_it(client, results):
    # "15" for PostgreSQL is its major; "11" for MariaDB is a range of majors
    assert list(chips(search(client, "postgresql 15"))) == ["engine: postgresql", "version: 15"]
    assert run_count(search(client, "mysql 15")) == 0
    # with the engine in the URL's filters instead of the search
    page = client.get(PAGE, {"engine": "mariadb", "q": "11"}).content.decode()
    assert run_count(page) == 1


def test_each_chip_drops_its_own_word(client, results):
    page = search(client, "postgresql 15 xfs")
    url = chips(page)["filesystem: xfs"]

    assert "q=postgresql+15" in url and "xfs" not in url
    assert run_count(client.get(url).content.decode()) == 3


def test_the_search_keeps_the_words_as_typed_in_the_address(client, results):
    response = client.get(PAGE, {"q": "PostgreSQL xfs", "sort": "cpu"}, headers=HTMX)

    assert "q=PostgreSQL+xfs" in response["HX-Push-Url"]
    assert run_count(response.content.decode()) == 2


def test_a_word_that_matches_nothing_says_what_it_could_have_been(client, results):
    page = search(client, "postgresql redis")

    assert run_count(page) == 0
    reasons = html.unescape(page[page.index('id="results-search-reasons"') :])
    assert "“redis” matches nothing: it is not an engine, version, filesystem" in reasons
    assert "known here: engines: mariadb, mysql, postgresql; filesystems: ext4, xfs" in reasons
    assert "“postgresql” (engine: postgresql) alone matches 4 runs" in reasons


def test_words_that_each_match_but_not_together_say_their_own_counts(client, results):
    page = html.unescape(search(client, "mysql xfs"))

    assert run_count(page) == 0
    assert "“mysql” (engine: mysql) alone matches 1 run<" in page
    assert "“xfs” (filesystem: xfs) alone matches 3 runs" in page


def test_a_pending_runs_value_is_not_recognised_for_others(client, alice, results):
    # zfs exists only in alice's pending upload: for everyone else it is just a word
    public = search(client, "zfs")
    assert run_count(public) == 0
    assert "filesystem: zfs" not in public
    assert "CPU, OS or version text: zfs" in html.unescape(public)

    client.force_login(alice)
    hers = search(client, "zfs")
    assert run_count(hers) == 1
    assert "filesystem: zfs" in hers
