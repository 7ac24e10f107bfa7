"""/results/feed.atom: the newest runs a results URL shows, as an Atom feed a
reader can follow; the results browser links the feed of what it shows."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

ATOM = "{http://www.w3.org/2005/Atom}"
FEED = "/results/feed.atom"


def store(user, values, status=Submission.Status.APPROVED, **environment) -> int:
    document = sweep_document(values, **environment)
    outcome = submission_create(submitter=user, document=document, status=status)
    return outcome.submission.runs.get().pk


def entries(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)  # noqa: S314 -- our own server's answer
    return [
        {
            "title": entry.findtext(f"{ATOM}title"),
            "link": entry.find(f"{ATOM}link").get("href"),
            "author": entry.findtext(f"{ATOM}author/{ATOM}name"),
            "summary": entry.findtext(f"{ATOM}summary"),
        }
        for entry in feed.findall(f"{ATOM}entry")
    ]


def test_the_feed_lists_what_the_url_filters_and_searches_newest_first(client, bob, alice):
    xfs = {"storage": {"filesystem": "xfs", "kind": "ssd"}}
    first = store(bob, {1: 410.0, 16: 1730.5})
    store(bob, {1: 95.0}, **xfs)
    second = store(alice, {1: 388.0, 8: 1200.0, 32: 990.0})
    store(alice, {1: 1.0}, status=Submission.Status.PENDING)

    found = entries(client.get(FEED, {"q": "postgresql ext4"}))

    assert [e["link"] for e in found] == [
        f"http://testserver/runs/{second}/",
        f"http://testserver/runs/{first}/",
    ]
    assert found[0]["title"].endswith("ext4: 1,200 tx/s")
    assert found[0]["author"] == "alice"
    assert found[1]["summary"].startswith("throughput 1,730 tx/s at clients=16 (n 1)")


def test_a_submitters_uploads_are_a_feed(client, bob, alice):
    store(bob, {1: 410.0})
    hers = store(alice, {1: 388.0})

    found = entries(client.get(FEED, {"submitter": "ALICE"}))

    assert [e["link"] for e in found] == [f"http://testserver/runs/{hers}/"]


def test_a_filter_the_api_refuses_is_a_400_naming_it(client, bob):
    response = client.get(FEED, {"engine": "redis"})

    assert response.status_code == 400
    assert "engine: unknown engine 'redis'" in response.content.decode()


def test_the_results_browser_links_the_feed_of_what_it_shows(client, bob):
    store(bob, {1: 410.0})

    page = client.get("/results/", {"engine": "postgresql", "q": "ext4", "sort": "cpu"})
    href = html.unescape(
        re.search(r'<a href="([^"]+)" id="results-feed"', page.content.decode())[1]
    )

    assert href == "/results/feed.atom?engine=postgresql&q=ext4"
    assert len(entries(client.get(href))) == 1


def test_comparisons_leaderboards_and_changes_link_the_feed_of_their_runs(client, bob):
    pg16 = {"database": {"version_string": "PostgreSQL 16.2 on x86_64", "config_profile": "x"}}
    fifteen = store(bob, {1: 410.0})
    sixteen = store(bob, {1: 450.0}, **pg16)
    feeds = {}
    for page, anchor in (
        ("/compare/?benchmark=select-update&metric=throughput&x=param.clients&engine=postgresql"
         "&param.clients=1", "comparison-feed"),
        ("/benchmarks/select-update/leaderboard/?version_major=16", "leaderboard-feed"),
        ("/changes/?engine=postgresql&from=16&to=15", "changes-feed"),
    ):  # fmt: skip
        html_page = client.get(page).content.decode()
        href = re.search(rf'<a href="([^"]+)" id="{anchor}"', html_page)[1]
        feeds[anchor] = html.unescape(href)

    assert (
        feeds["comparison-feed"] == "/results/feed.atom?benchmark=select-update&engine=postgresql"
    )
    assert (
        feeds["leaderboard-feed"] == "/results/feed.atom?benchmark=select-update&version_major=16"
    )
    assert feeds["changes-feed"] == (
        "/results/feed.atom?engine=postgresql&version_min=15&version_max=16.99999.99999"
    )
    links = {anchor: [e["link"] for e in entries(client.get(url))] for anchor, url in feeds.items()}
    assert links["leaderboard-feed"] == [f"http://testserver/runs/{sixteen}/"]
    assert links["changes-feed"] == [
        f"http://testserver/runs/{sixteen}/",
        f"http://testserver/runs/{fifteen}/",
    ]
