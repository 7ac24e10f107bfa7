"""Studies: runs that answer one question, published as one page. Made over the
API from the owner's own submissions, shown as the seed articles drew theirs —
the varied factor along x, relative to the reference = 100, each cell judged
against it — public once every run is approved, and citable by its uuid."""

from __future__ import annotations

import html
import statistics

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.studies.models import Study
from benchhub.studies.services import seed_studies_load
from tests.factories import example_document, sweep_document

API = "/api/v1/studies/"


def storage(filesystem: str) -> dict:
    return {**example_document()["environment"]["storage"], "filesystem": filesystem}


def upload(api, values, samples, filesystem: str) -> str:
    document = sweep_document(values, storage=storage(filesystem))
    document["runs"][0]["measurements"][0]["samples"] = samples
    response = api.post("/api/v1/submissions/", document, format="json")
    assert response.status_code == 201, response.content
    return document["uuid"]


@pytest.fixture
def filesystems(alice_api):
    """Alice's study of select-update on three filesystems, uneven on purpose."""
    runs = {
        "ext4": [({8: 1500.0, 32: 1490.0}, [1500.0, 1480.0, 1530.0]),
                 ({8: 1460.0}, [1460.0, 1455.0, 1470.0])],
        "xfs": [({8: 1710.0, 32: 1760.0}, [1710.0, 1690.0, 1722.0]),
                ({8: 1650.0}, [1650.0, 1640.0, 1672.0]),
                ({8: 1702.5}, [1702.5, 1700.0, 1711.0])],
        "btrfs": [({8: 1210.0}, [1210.0, 1190.0, 1230.0])],
    }  # fmt: skip
    uuids = [
        upload(alice_api, values, samples, filesystem)
        for filesystem, made in runs.items()
        for values, samples in made
    ]
    return runs, uuids


def create(api, uuids, **extra):
    body = {
        "title": "Filesystems for PostgreSQL on my laptop",
        "question": "Which filesystem gives select-update the most throughput?",
        "benchmark": "select-update",
        "metric": "throughput",
        "vary": ["filesystem"],
        "reference": "ext4",
        "submissions": uuids,
        **extra,
    }
    return api.post(API, body, format="json")


def test_a_study_shows_each_filesystem_relative_to_the_reference(alice_api, filesystems):
    _, uuids = filesystems
    made = create(alice_api, uuids)
    assert made.status_code == 201, made.content

    data = alice_api.get(f"{API}{made.json()['uuid']}/").json()

    cells = {cell["x"]: cell for cell in data["cells"]}
    # each run at its best point: ext4 1500 and 1460; xfs 1760, 1650, 1702.5; btrfs 1210
    ext4 = statistics.median([1500.0, 1460.0])
    xfs = statistics.median([1760.0, 1650.0, 1702.5])
    assert (cells["ext4"]["median"], cells["ext4"]["n"], cells["ext4"]["relative"]) == (
        ext4,
        2,
        100.0,
    )
    assert cells["xfs"]["median"] == xfs and cells["xfs"]["n"] == 3
    assert cells["xfs"]["relative"] == pytest.approx(100 * xfs / ext4, rel=1e-12)
    assert cells["btrfs"]["relative"] == pytest.approx(100 * 1210.0 / ext4, rel=1e-12)
    # with each best point's own repetitions (xfs's first run peaked at 32, unrepeated)
    expected = verdict(
        [
            RunValues(1760.0),
            RunValues(1650.0, (1650.0, 1640.0, 1672.0)),
            RunValues(1702.5, (1702.5, 1700.0, 1711.0)),
        ],
        [RunValues(1500.0, (1500.0, 1480.0, 1530.0)), RunValues(1460.0, (1460.0, 1455.0, 1470.0))],
        direction="higher",
    )
    assert cells["xfs"]["verdict"]["verdict"] == expected.verdict
    assert cells["ext4"]["verdict"] is None
    assert data["held"]["engine"] == "postgresql" and "filesystem" not in data["held"]


def test_a_study_is_public_only_once_every_run_is_approved(client, alice_api, filesystems):
    _, uuids = filesystems
    study = create(alice_api, uuids).json()["uuid"]

    assert client.get(f"/studies/{study}/").status_code == 404
    assert study not in {s["uuid"] for s in client.get(API).json()["results"]}
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = html.unescape(client.get(f"/studies/{study}/").content.decode())
    assert "Which filesystem gives select-update the most throughput?" in page
    assert "ext4 (reference)" in page
    assert study in {s["uuid"] for s in client.get(API).json()["results"]}


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"vary": ["filesystem", "filesystem"]}, "$.vary", "one or two different names"),
        ({"vary": ["status"]}, "$.vary", "one or two different names"),
        ({"vary": ["engine"]}, "$.vary", "engine is 'postgresql' in every run: nothing varies"),
        ({"reference": "zfs"}, "$.reference", "'zfs' is not a value of filesystem"),
        ({"metric": "tps"}, "$.metric", "no metric 'tps' of benchmark 'select-update'"),
        ({"title": ""}, "$.title", "this field is required"),
        ({"submissions": ["nope"]}, "$.submissions", "'nope' is not a UUID"),
        ({"colour": "red"}, "$.colour", "unknown field"),
    ],
)
def test_what_a_study_cannot_claim_is_a_400_naming_it(
    alice_api, filesystems, change, path, message
):
    _, uuids = filesystems

    response = create(alice_api, uuids, **change)

    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert detail["path"] == path and message in detail["message"]


def test_a_study_is_made_of_its_owners_submissions_only(bob_api, filesystems):
    _, uuids = filesystems

    response = create(bob_api, uuids)

    assert response.status_code == 400
    assert "not submissions of yours" in response.json()["error"]["message"]


def test_signing_in_is_needed_to_make_one(anonymous_api, filesystems):
    _, uuids = filesystems
    assert create(anonymous_api, uuids).status_code == 401


def test_a_repetition_is_listed_on_the_original(client, alice_api, bob_api, bob, filesystems):
    _, uuids = filesystems
    original = create(alice_api, uuids).json()["uuid"]
    mine = [
        upload(bob_api, {8: 900.0}, [900.0, 910.0, 890.0], "ext4"),
        upload(bob_api, {8: 1000.0}, [1000.0, 990.0, 1012.0], "xfs"),
    ]
    repeat = create(bob_api, mine, repeats=original, title="The same on my desktop")
    assert repeat.status_code == 201, repeat.content
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = html.unescape(client.get(f"/studies/{original}/").content.decode())

    assert "Repeated on other machines" in page and "The same on my desktop" in page


def test_each_machine_that_repeated_a_study_is_side_by_side_with_its_agreement(
    client, alice_api, bob_api, filesystems
):
    _, uuids = filesystems
    original = create(alice_api, uuids).json()["uuid"]
    desktop = [
        upload(bob_api, {8: 900.0}, [900.0, 910.0, 890.0], "ext4"),
        upload(bob_api, {8: 1000.0}, [1000.0, 990.0, 1012.0], "xfs"),
    ]
    create(bob_api, desktop, repeats=original, title="The same on my desktop")
    server = [
        upload(alice_api, {8: 1000.0}, [1000.0, 1004.0, 991.0], "ext4"),
        upload(alice_api, {8: 800.0}, [800.0, 811.0, 795.0], "xfs"),
        upload(alice_api, {16: 1300.0}, [1300.0, 1290.0, 1320.0], "btrfs"),
    ]
    create(alice_api, server, repeats=original, title="On the build server")
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = client.get(f"/studies/{original}/")
    machines = page.context["machines"]
    rows = dict(machines.rows())

    # Each machine relative to its own ext4: the original's 1480 (median of 1500
    # and 1460), xfs 1702.5 and btrfs 1210; the desktop's 900 and 1000; the
    # server's 1000, 800 and 1300.
    assert machines.levels == ["btrfs", "ext4", "xfs"]
    assert rows["ext4"] == [100.0, 100.0, 100.0]
    assert rows["xfs"] == pytest.approx([100 * 1702.5 / 1480, 100 * 1000 / 900, 80.0])
    assert rows["btrfs"] == pytest.approx([100 * 1210 / 1480, None, 130.0])
    desktop_machine, server_machine = machines.machines[1:]
    assert (desktop_machine.agreeing, desktop_machine.pairs) == (1, 1)
    assert (server_machine.agreeing, server_machine.pairs) == (0, 3)
    shown = html.unescape(page.content.decode())
    assert "1 of 1 pairs" in shown and "0 of 3 pairs" in shown
    assert 'id="study-machines-chart"' in shown


def test_the_seed_articles_are_studies(client, db):
    articles_load()
    made = seed_studies_load()
    assert seed_studies_load() == []  # once

    titles = [study.title for study in made]
    assert any("seed 003" in title for title in titles)
    seed_003 = next(study for study in made if "seed 003" in study.title)
    data = client.get(f"{API}{seed_003.uuid}/").json()
    raw = [cell for cell in data["cells"] if cell["x"] == "raw"]
    assert [cell["relative"] for cell in raw] == [100.0]
    assert data["citation"]["title"].startswith("Choix d'un système de fichiers")


def test_a_study_page_gives_the_command_that_repeats_it_and_what_to_add(
    client, alice_api, filesystems
):
    _, uuids = filesystems
    original = create(alice_api, uuids).json()["uuid"]
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = html.unescape(client.get(f"/studies/{original}/").content.decode())

    assert (
        f"benchhub-agent study --like http://testserver/studies/{original}/ "
        "--dsn postgresql://postgres@127.0.0.1:5432/bench --upload"
    ) in page
    assert "filesystem: add --on DIR,DIR… (mount points of the study's filesystems)" in page


def test_a_study_of_what_the_agent_cannot_vary_says_so_instead_of_a_command(
    client, alice_api, bob_api
):
    made = []
    for cores, value in ((8, 1500.0), (16, 2210.0)):
        hardware = {**example_document()["environment"]["hardware"], "cores": cores}
        document = sweep_document({8: value}, hardware=hardware)
        assert alice_api.post("/api/v1/submissions/", document, format="json").status_code == 201
        made.append(document["uuid"])
    original = create(alice_api, made, vary=["cores"], reference="").json()
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = html.unescape(client.get(f"/studies/{original['uuid']}/").content.decode())

    assert "benchhub-agent study --like" not in page
    assert "The agent cannot vary cores; it varies config_profile, cpu_placement," in page


def test_a_seed_study_offers_the_same_question_as_a_new_study_where_the_agent_runs_it(client, db):
    articles_load()
    seed_studies_load()
    pages = {
        tuple(study.varied): html.unescape(client.get(f"/studies/{study.uuid}/").content.decode())
        for study in Study.objects.all()
    }

    # Seed 002: sql-bench by filesystem and my.cnf profile, on MySQL.
    page = pages[("filesystem", "config_profile")]
    assert "so --like cannot replay them" in page
    assert (
        "benchhub-agent study sql-bench --dsn mysql://root@127.0.0.1:3306/bench "
        "--vary filesystem --vary config 'NAME:SETTING=VALUE,…;NAME:…' --upload"
    ) in page
    assert "benchhub-agent study --like" not in page
    # Seed 003's combined TPC score is not a benchmark the agent runs.
    assert (
        "The agent has no tpc-average benchmark to run." in pages[("filesystem", "mount_options")]
    )
