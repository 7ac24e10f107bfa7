"""The run page /runs/<id>/: its environment, its measurements with their
spread and noise, its chart, its links, and the queries it costs. Where it
stands: test_run_page_ranks.py; how to run it again: test_run_page_reproduce.py."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

from django.contrib.auth.models import User

from benchhub.accounts.roles import role_grant
from benchhub.baselines.services import baselines_refresh
from benchhub.results.models import Run, Submission
from tests.factories import example_document
from tests.results.run_pages import queries_of, run_of, store


def environment_cell(page: str, label: str) -> str:
    """The text of the environment table's value for ``label``, tags and
    the raw string's <details> removed."""
    match = re.search(rf'<th scope="row">{re.escape(label)}</th>\s*<td>(.*?)</td>', page, re.S)
    assert match, f"no {label} row"
    shown = re.sub(r"<details.*?</details>", "", match.group(1), flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", "", shown).split())


def test_the_run_page_shows_its_environment_with_the_raw_strings_one_click_away(client, bob):
    run = run_of(store(bob, example_document()))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    # normalized values, readable
    assert environment_cell(page, "kind") == "nvme"
    assert environment_cell(page, "RAM") == "32.0 GiB"
    assert environment_cell(page, "engine") == "postgresql"
    assert environment_cell(page, "server version") == "15.18"
    assert environment_cell(page, "mount options") == "noatime, relatime"
    # a vocabulary value as the filters and the other pages spell it
    assert environment_cell(page, "protocol") == "unix_socket"
    # the strings the agent sent, behind a <details>
    environment = page[page.index('id="environment"') : page.index('id="settings-title"')]
    assert "<details" in environment
    assert "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu" in environment
    assert "rw,relatime,noatime" in environment
    # the database settings
    settings = page[page.index('id="settings"') :]
    assert "<code>shared_buffers</code>" in settings and "128MB" in settings


def test_every_measurement_is_listed_with_its_repetitions_spread_and_noise(client, bob):
    document = example_document()
    document["runs"][0]["measurements"][0]["samples"] = [305.1, 150.0, 420.0]  # noisy
    run = run_of(store(bob, document))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    table = page[page.index('id="measurements"') :]
    rows = re.findall(r"<tr>\s*<th scope=\"row\">", table)
    assert len(rows) == len(document["runs"][0]["measurements"])
    assert "n=3, 150\u2013420" in table
    assert "noisy: repetitions vary by" in table
    # clients=1 is not flagged where its repetitions agree
    assert "n=3, 3.086\u20133.194, CV 1.8%" in table


def test_a_noisy_flag_gives_the_same_figure_as_the_cv_beside_it(client, bob):
    document = example_document()
    document["runs"][0]["measurements"][0]["samples"] = [90.51, 100.0, 109.49]
    run = run_of(store(bob, document))

    table = client.get(f"/runs/{run.pk}/").content.decode()
    table = table[table.index('id="measurements"') :]

    assert "CV 9.5%" in table
    assert "noisy: repetitions vary by 9.5%" in table


def test_the_chart_data_is_the_run_sweep_by_clients(client, bob):
    run = run_of(store(bob, example_document()))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    match = re.search(r'<script id="run-chart-data" type="application/json">(.*?)</script>', page)
    chart = json.loads(match.group(1))
    throughput = next(m for m in chart["metrics"] if m["metric"] == "throughput")
    assert throughput["x"] == "clients" and throughput["x_numeric"] is True
    xs = [p["x"] for p in throughput["points"]]
    assert xs == sorted(xs) and len(xs) > 1
    first = throughput["points"][0]
    assert (first["x"], first["y"], first["min"], first["max"]) == (1, 305.1, 302.6, 308.1)
    # the canvas names its text alternative
    assert 'aria-describedby="measurements-title"' in page


def test_the_run_page_links_a_comparison_the_reproduce_command_json_and_csv(client, bob):
    run = run_of(store(bob, example_document()))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    compare = re.search(r'id="compare-like"', page) and re.search(
        r'href="(/compare/\?[^"]+)" id="compare-like"', page
    )
    query = parse_qs(urlsplit(html.unescape(compare.group(1))).query)
    assert query["benchmark"] == ["select-update"] and query["engine"] == ["postgresql"]
    assert query["version_major"] == ["15"] and query["x"] == ["param.clients"]
    # the comparison it links answers, with this run in it
    answer = client.get("/api/v1/comparisons/", query).json()
    assert answer["series"] and answer["x_values"][0] == 1
    # "runs like it" keeps its filesystem: postgresql 15 on ext4, per CPU model
    assert query["filesystem"] == ["ext4"] and query["series"] == ["cpu_model"]
    # the other comparisons each vary one thing of its environment, and answer
    more = page[page.index('id="more-comparisons"') :].split("</p>")[0]
    links = [html.unescape(url) for url in re.findall(r'href="(/compare/\?[^"]+)"', more)]
    series = [parse_qs(urlsplit(url).query)["series"][0] for url in links]
    assert series == ["filesystem", "version_major", "cpu_model"]
    for url in links:
        other = client.get("/api/v1/comparisons/", parse_qs(urlsplit(url).query))
        assert other.status_code == 200 and other.json()["series"], url
    # run --like needs a database: the command names one of the run's engine
    assert (
        f"benchhub-agent run --like http://testserver/api/v1/runs/{run.pk}/"
        " --dsn postgresql://postgres@127.0.0.1:5432/bench"
    ) in page
    assert f'href="http://testserver/api/v1/runs/{run.pk}/" id="run-json"' in page
    assert f'href="/api/v1/measurements/export.csv?run={run.pk}"' in page
    response = client.get(f"/api/v1/measurements/export.csv?run={run.pk}")
    csv = b"".join(response.streaming_content).decode()
    assert csv.count("\n") == 1 + len(run.measurements.all())


def test_curated_data_carries_its_citation_in_the_language_of_its_title(client, bob):
    document = example_document()
    document["source"] = {
        "kind": "curated",
        "citation": {"title": "基本性能ベンチマークテスト", "date": "2006-01-01"},
    }
    run = run_of(store(bob, document))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert '<cite lang="ja">基本性能ベンチマークテスト</cite>' in page


def test_the_run_page_reads_a_fixed_number_of_queries_however_many_measurements(client, bob):
    def run_with(points: int, scale: float) -> Run:
        document = example_document()
        document["runs"][0]["measurements"] = [
            {
                "metric": "throughput",
                "unit": "tx/s",
                "parameters": {"clients": c},
                "value": scale * c,
            }
            for c in range(1, points + 1)
        ]
        return run_of(store(bob, document))

    small, big = run_with(3, 7.25), run_with(200, 10.5)
    baselines_refresh()

    # The same statements for 3 measurements as for 200 (no query per
    # measurement), and a handful: the run with its environment, the
    # measurements, their metrics, the key's baselines, the ranks.
    counted = queries_of(client, f"/runs/{small.pk}/")
    assert queries_of(client, f"/runs/{big.pk}/") == counted <= 8


def test_a_flag_parameter_reads_true_on_every_page_that_shows_it(client, bob, alice):
    """The run page and the benchmark page printed Python's rate_limited=True
    where the moderation queue, the filters and the facets say true."""
    document = example_document()
    document["runs"][0]["parameters"] = {"rate_limited": True, "prepared": False, "scale": 10}
    run = run_of(store(bob, document))
    store(
        alice,
        document | {"uuid": "7d2b1c0e-5f4a-4c3b-9a8d-1e2f3a4b5c6d"},
        Submission.Status.PENDING,
    )
    maud = User.objects.create_user(username="maud")
    role_grant(user=maud, role="moderator")
    client.force_login(maud)

    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    header = run_page[run_page.index('<p class="lede">') :]
    header = header[: header.index("</p>")]
    benchmark = client.get(f"/benchmarks/{run.benchmark.name}/").content.decode()
    benchmark = benchmark[benchmark.index('id="benchmark-parameters"') :]
    queue = client.get("/moderation/").content.decode()

    for page in (header, queue):
        assert "rate_limited=true" in page and "prepared=false" in page and "scale=10" in page
    assert "<code>rate_limited=true</code>" in benchmark
    assert "<code>prepared=false</code>" in benchmark
    assert "&amp;run_param.rate_limited=true" in benchmark  # the link filters as facets spell it
    for page in (header, benchmark, queue):
        assert "True" not in page and "False" not in page


def test_the_run_page_shows_the_run_noise_flags(client, bob):
    document = example_document()
    for measurement in document["runs"][0]["measurements"]:
        value = measurement["value"]
        measurement["samples"] = [value * 0.5, value, value * 1.5]
    run = run_of(store(bob, document))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    noise = page[page.index('id="run-noise"') :]
    noise = noise[: noise.index("</p>")]
    assert '<span class="flag">noisy</span>' in noise
    assert "its repetitions vary by 50.0%" in noise


def test_an_unrepeated_run_says_what_unrepeated_means_apart_from_its_spread(client, bob):
    # Two repetitions read "unrepeated: its repetitions vary by 2.0%", as if
    # the spread were why a run repeated twice counted as unrepeated.
    document = example_document()
    document["runs"][0]["repetitions"] = 2
    for measurement in document["runs"][0]["measurements"]:
        measurement["samples"] = [measurement["value"], measurement["value"] * 1.02]
    run = run_of(store(bob, document))

    page = client.get(f"/runs/{run.pk}/").content.decode()

    noise = page[page.index('id="run-noise"') :]
    noise = noise[: noise.index("</p>")]
    assert (
        '<span class="flag">unrepeated</span> (fewer than 3 repetitions); its repetitions vary by'
        in noise
    )
