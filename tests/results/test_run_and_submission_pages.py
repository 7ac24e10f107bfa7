"""The run page /runs/<id>/ and the submission page /submissions/<uuid>/."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.accounts.roles import role_grant
from benchhub.baselines.services import baselines_refresh
from benchhub.imports.services import articles_load
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, small_document, sql_bench_document

HOSTILE = "<img src=x onerror=alert(1)>"


def store(user, document, status=Submission.Status.APPROVED) -> Submission:
    return submission_create(submitter=user, document=document, status=status).submission


def run_of(submission: Submission) -> Run:
    return submission.runs.get()


def environment_cell(page: str, label: str) -> str:
    """The text of the environment table's value for ``label``, tags and
    the raw string's <details> removed."""
    match = re.search(rf'<th scope="row">{re.escape(label)}</th>\s*<td>(.*?)</td>', page, re.S)
    assert match, f"no {label} row"
    shown = re.sub(r"<details.*?</details>", "", match.group(1), flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", "", shown).split())


def headline_of(page: str) -> str:
    """The paragraph that says where the run stands."""
    headline = page[page.index('id="headline-standing"') :]
    return headline[: headline.index("</p>")]


def with_throughput_at_20(value: float, **environment) -> dict:
    document = small_document(**environment)
    document["runs"][0]["measurements"][1]["value"] = value
    document["runs"][0]["measurements"][1]["samples"] = [value * 0.7, value, value * 1.3]
    return document


@pytest.fixture
def ranked_run(bob):
    """Five approved runs of one key (1000…1400 tx/s at clients=20) with
    baselines computed, and the one at 1300 to look at."""
    runs = [run_of(store(bob, with_throughput_at_20(v))) for v in (1200, 1000, 1400, 1300, 1100)]
    baselines_refresh()
    return runs[3]


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


def test_the_run_page_says_where_the_run_stands_among_comparable_runs(client, ranked_run, settings):
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    page = client.get(f"/runs/{ranked_run.pk}/").content.decode()

    headline = headline_of(page)
    # 1300 does better than 1000, 1100 and 1200 of the 4 others (its own
    # value, in the baseline, is not a tie it half beats: not 70 %)
    assert "throughput at clients=20: 1300 tx/s" in headline
    assert '<strong id="headline-percentile">75%</strong>' in headline
    assert "the <strong>4</strong> other comparable approved results" in headline
    assert "of all n=5, this one included" in headline
    table = page[page.index('id="measurements"') :]
    assert "75% of 4 others" in table
    assert 'class="distribution"' in page


def test_the_baseline_figures_show_the_digits_the_baseline_holds(client, bob, settings):
    """The baseline counts values at 4 significant digits: its median of
    2650.1 and 2651.2 is 2650.5, the mean of buckets 2650 and 2651, where
    /compare/ says 2650.65. The page showed "2650.5" (and "2650.500" to a
    screen reader): digits it does not hold. It says "≈2650" instead."""
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    runs = [run_of(store(bob, with_throughput_at_20(v))) for v in (2600, 2650.1, 2651.2, 2700)]
    baselines_refresh()

    page = client.get(f"/runs/{runs[-1].pk}/").content.decode()

    headline = headline_of(page)
    assert "(median ≈2650, middle half ≈2638\u2013≈2663 tx/s" in headline
    assert "from ≈2600 to ≈2700 tx/s, median ≈2650;" in page
    assert "≈: the comparable results are counted at 4 significant digits" in page
    assert "2650.5" not in page


def test_a_point_spelt_as_a_float_is_ranked_among_the_same_point(client, bob, settings):
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    # the baselines pool clients=20 and clients=20.0 as one point; the page must find it
    others = [with_throughput_at_20(v) for v in (1200, 1000, 1400, 1100)]
    for document in others:
        store(bob, document)
    spelt_as_float = with_throughput_at_20(1300)
    spelt_as_float["runs"][0]["measurements"][1]["parameters"] = {"clients": 20.0}
    run = run_of(store(bob, spelt_as_float))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert '<strong id="headline-percentile">75%</strong>' in page
    assert "n=5" in page


def test_a_run_alone_in_its_key_is_not_ranked(client, bob):
    run = run_of(store(bob, small_document()))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert "nothing to rank it against" in page
    assert "headline-percentile" not in page


def test_a_pending_run_is_ranked_against_the_one_approved_result_of_its_key(client, bob):
    """Its own values are not in the baselines: the one approved result
    there is another's (an approved run alone, counted, is not ranked)."""
    approved = run_of(store(bob, with_throughput_at_20(1000)))
    pending = run_of(store(bob, with_throughput_at_20(1300), status=Submission.Status.PENDING))
    baselines_refresh()
    client.force_login(bob)

    page = client.get(f"/runs/{pending.pk}/").content.decode()
    headline = headline_of(page)
    assert "n=1" in headline
    assert "nothing to rank it against" not in page
    # its rows too: ranked against that one, none of them "the only one"
    assert "the only one" not in page[page.index('id="measurements"') :]

    alone = client.get(f"/runs/{approved.pk}/").content.decode()
    assert "nothing to rank it against" in alone


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


def test_the_public_sees_approved_runs_only_and_a_submitter_their_own_pending(client, alice, bob):
    pending = store(alice, small_document(), status=Submission.Status.PENDING)
    run = run_of(pending)

    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 404
    client.force_login(bob)
    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 404
    client.force_login(alice)
    assert client.get(f"/runs/{run.pk}/").status_code == 200
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 200


def test_a_pending_submission_says_what_it_waits_for_and_who_sees_it(client, alice):
    """The agent prints the submission's URL; its page said only "pending"."""
    submission = store(alice, small_document(), status=Submission.Status.PENDING)
    client.force_login(alice)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()
    status = page[page.index('<th scope="row">Status</th>') :].split("</tr>")[0]

    assert "waits for a moderator" in status
    assert "only you and the moderators see it" in status
    assert 'href="/accounts/submissions/"' in status

    submission_moderate(submission=submission, actor=None, action="approve")
    page = client.get(f"/submissions/{submission.uuid}/").content.decode()
    assert "waits for a moderator" not in page


def test_the_submission_page_lists_its_runs_source_tool_command_and_status(client, bob):
    document = example_document()
    document["runs"].append(json.loads(json.dumps(document["runs"][0])))
    submission = store(bob, document)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()

    runs = list(submission.runs.order_by("position"))
    for run in runs:
        assert f'href="/runs/{run.pk}/"' in page
    assert "measured by the agent" in page and "approved" in page
    assert submission.command and html.escape(submission.command) in page


def test_the_moderation_history_is_shown_to_its_submitter_only(client, alice, bob):
    submission = store(alice, small_document(), status=Submission.Status.PENDING)
    submission_moderate(
        submission=submission, actor=None, action="reject", reason="numbers <b>too</b> round"
    )
    client.force_login(alice)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()

    history = page[page.index('id="moderation-history"') :]
    assert "Reject by BenchHub" in history
    assert "numbers &lt;b&gt;too&lt;/b&gt; round" in history
    client.force_login(bob)
    assert client.get(f"/submissions/{submission.uuid}/").status_code == 404


def test_a_hostile_hardware_name_is_shown_as_text(client, bob):
    document = example_document(
        hardware={"cpu": HOSTILE, "cores": 2}, storage={"filesystem": HOSTILE}
    )
    submission = store(bob, document)

    for url in (f"/runs/{run_of(submission).pk}/", f"/submissions/{submission.uuid}/"):
        page = client.get(url).content.decode()
        assert "<img src=x" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_api_answers_each_submission_and_run_with_its_page(anonymous_api, alice_api, bob):
    document = small_document()
    stored = alice_api.post("/api/v1/submissions/", document, format="json").json()
    assert stored["html_url"] == f"http://testserver/submissions/{document['uuid']}/"
    run_id = stored["runs"][0]["id"]
    assert stored["runs"][0]["html_url"] == f"http://testserver/runs/{run_id}/"

    approved = store(bob, small_document())
    listed = anonymous_api.get("/api/v1/submissions/").json()["results"][0]
    assert listed["html_url"] == f"http://testserver/submissions/{approved.uuid}/"
    run = run_of(approved)
    detail = anonymous_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert detail["html_url"] == f"http://testserver/runs/{run.pk}/"
    assert anonymous_api.get(detail["html_url"]).status_code == 200


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


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


def test_the_submission_page_reads_a_fixed_number_of_queries(client, bob):
    def submission_with(runs: int) -> Submission:
        document = example_document()
        document["runs"] = [json.loads(json.dumps(document["runs"][0])) for _ in range(runs)]
        return store(bob, document)

    one, twelve = submission_with(1), submission_with(12)

    # the submission, then its runs with their environment and counts
    counted = queries_of(client, f"/submissions/{one.uuid}/")
    assert queries_of(client, f"/submissions/{twelve.uuid}/") == counted <= 3


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


def reproduce_section(page: str) -> str:
    return page[page.index('id="reproduce-title"') :].split("</section>")[0]


def seed_run(benchmark: str, engine: str = "firebird") -> Run:
    return Run.objects.filter(
        benchmark__name=benchmark,
        submission__source=Submission.Source.CURATED,
        server__engine=engine,
    ).first()


def test_only_a_run_the_agent_measured_is_offered_run_like(client, bob):
    measured = run_of(store(bob, example_document()))
    imported = example_document()
    imported["source"] = {"kind": "import", "tool": "pgbench"}
    older = example_document()
    older["runs"][0]["benchmark_version"] = "0"

    offered = reproduce_section(client.get(f"/runs/{measured.pk}/").content.decode())
    assert "benchhub-agent run --like" in offered
    for document, why in [
        (imported, "come from pgbench, imported, not from the agent"),
        (older, "It ran version 0 of the agent&#x27;s select-update"),
    ]:
        run = run_of(store(bob, document))
        section = reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        assert "benchhub-agent run --like" not in section
        assert why in section
        assert "benchhub-agent run select-update --dsn postgresql://" in section


def test_a_seed_run_says_why_the_agent_cannot_repeat_it_and_offers_what_it_can(client, db):
    articles_load()
    sql_bench, tpcb, tpcc = seed_run("sql-bench", "mysql"), seed_run("tpcb"), seed_run("tpcc")

    sections = {
        run.benchmark.name: reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        for run in (sql_bench, tpcb, tpcc)
    }

    for section in sections.values():
        assert "benchhub-agent run --like" not in section
    assert "from a published article, not from the agent" in sections["sql-bench"]
    assert (
        "benchhub-agent run sql-bench --dsn mysql://root@127.0.0.1:3306/bench"
        in (sections["sql-bench"])
    )
    # Seed 003's TPC-B and TPC-C ran on Firebird, which the agent's tpcb and tpcc drive:
    # its own, on the run's engine.
    for name in ("tpcb", "tpcc"):
        assert "from a published article, not from the agent" in sections[name]
        assert "not on Firebird" not in sections[name]
        assert f"benchhub-agent run {name} --dsn firebird://SYSDBA:" in sections[name]


def test_a_pinned_seed_backup_offers_the_agents_backup_pinned_alike(client, db):
    """Seed 001 timed gbak with the server's core and another's: the agent's
    backup on the user's database measures the same only with that --pin."""
    articles_load()
    backups = Run.objects.filter(
        benchmark__name="backup", submission__source=Submission.Source.CURATED
    ).select_related("client")
    offered = {
        run.client.cpu_placement: reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        for run in backups
    }

    assert {"same_core", "other_core", "unpinned"} <= set(offered)
    for placement in ("same_core", "other_core"):
        command = re.search(r'<code id="reproduce-command">([^<]*)</code>', offered[placement])
        assert command, offered[placement]
        assert html.unescape(command.group(1)).endswith(f" --pin {placement}")
        assert f"pinned as this run was (<code>--pin {placement}</code>)" in offered[placement]
    assert "--pin" not in offered["unpinned"]


def test_a_pinned_run_of_a_benchmark_that_cannot_pin_says_yours_will_be_unpinned(client, bob):
    document = sql_bench_document({"insert": 2.0}, "ext4")
    document["source"] = {"kind": "import", "tool": "sql-bench"}
    document["environment"]["client"]["cpu_placement"] = "same_core"
    run = run_of(store(bob, document))

    section = reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())

    assert "benchhub-agent run sql-bench --dsn postgresql://" in section
    assert "--pin" not in section
    assert "the agent&#x27;s sql-bench cannot, so yours will be unpinned" in section


def test_a_benchmark_the_agent_does_not_run_offers_no_agent_command(client, db):
    articles_load()

    average = client.get("/benchmarks/tpc-average/").content.decode()
    tpcb = client.get("/benchmarks/tpcb/").content.decode()
    tpcc = client.get("/benchmarks/tpcc/").content.decode()

    assert "benchhub-agent run" not in average and 'id="no-agent-benchmark"' in average
    # tpcb's and tpcc's only runs are seed 003's: how to run each, but no --like of an article
    assert "benchhub-agent run tpcb --help" in tpcb and "run --like" not in tpcb
    assert "benchhub-agent run tpcc --help" in tpcc and "run --like" not in tpcc


def standing_cell(page: str, metric: str, point: str) -> str:
    """The "Among comparable runs" cell of one measurement row."""
    table = page[page.index('id="measurements"') :]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        if f'<th scope="row">{metric}</th>' in row and f"<td>{point}</td>" in row:
            return re.findall(r"<td>(.*?)</td>", row, re.S)[-2]
    raise AssertionError(f"no row {metric} {point}")


def test_a_run_is_ranked_among_ten_others_and_not_among_nine(client, bob):
    """RANK_MIN_RESULTS (10 by default): with 9 other results the page names
    n and no percentile; a tenth and it ranks, with n beside it."""
    values = [1000.0, 1210.5, 1000.0, 1333.0, 1800.0, 1100.0, 1055.0, 990.0, 1402.0]
    for value in values:
        store(bob, with_throughput_at_20(value))
    run = run_of(store(bob, with_throughput_at_20(1250.0)))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "headline-percentile" not in page
    assert "Not ranked: 9 comparable results, fewer than 10" in headline_of(page)
    cell = standing_cell(page, "throughput", "clients=20")
    assert "not ranked: 9 comparable results, fewer than 10" in cell and "%" not in cell

    store(bob, with_throughput_at_20(1275.0))
    baselines_refresh()
    page = client.get(f"/runs/{run.pk}/").content.decode()
    # 1250 beats 990, 1000, 1000, 1055, 1100, 1210.5 of the 10 others: 60 %
    assert '<strong id="headline-percentile">60%</strong>' in headline_of(page)
    assert "the <strong>10</strong> other comparable approved results" in headline_of(page)
    assert standing_cell(page, "throughput", "clients=20").startswith("60% of 10 others")


def test_a_metric_whose_results_are_all_equal_is_not_ranked(client, bob, anonymous_api):
    """count_distinct = 0 s in every sql-bench run: "better than 69 %" of
    results that do not differ says nothing. The rest of the run, which
    differs, is still ranked."""
    runs = []
    for index in range(12):
        document = with_throughput_at_20(1000.0 + 37.5 * index)
        document["runs"][0]["measurements"][0]["value"] = 0.0  # clients=1: all zero
        runs.append(run_of(store(bob, document)))
    baselines_refresh()

    page = client.get(f"/runs/{runs[5].pk}/").content.decode()
    assert standing_cell(page, "throughput", "clients=1") == (
        '<span class="muted unranked">not ranked: all 12 comparable results are equal (0)</span>'
    )
    assert standing_cell(page, "throughput", "clients=20").startswith("45% of 11 others")
    rank = anonymous_api.get(
        "/api/v1/baselines/rank/",
        {
            "fingerprint": runs[0].fingerprint,
            "metric": "throughput",
            "value": 0,
            "param.clients": 1,
        },
    ).json()
    assert (rank["n"], rank["percentile"]) == (12, None)
    assert rank["unranked"] == "not ranked: all 12 comparable results are equal (0)"
