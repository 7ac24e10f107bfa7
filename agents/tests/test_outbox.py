"""The outbox: whole documents or none, sent oldest first, kept while the server is down."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _upload_servers import NO_WAIT, dead_server, example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer

# Names whose alphabetical order is neither the order they were kept in nor its reverse.
KEPT_IN_THIS_ORDER = [
    "c0000000-0000-4000-8000-000000000003",
    "a0000000-0000-4000-8000-000000000001",
    "e0000000-0000-4000-8000-000000000005",
    "b0000000-0000-4000-8000-000000000002",
    "d0000000-0000-4000-8000-000000000004",
]


class NotJson:
    """A value json.dump reaches only after it has written most of the document."""


def keep_in_order(outbox: Outbox, uuids: list[str]) -> None:
    """Keep documents as if saved a minute apart, oldest first."""
    for age, document_uuid in enumerate(reversed(uuids), start=1):
        saved = outbox.save(example(document_uuid))
        when = 1_700_000_000 - 60 * age
        os.utime(saved, (when, when))


def test_a_write_that_fails_halfway_leaves_the_previous_document_whole(outbox_dir):
    outbox = Outbox(outbox_dir)
    first = example()
    outbox.save(first)
    broken = example()
    broken["zzz_last"] = NotJson()  # serialised after everything else: the file is half written
    with pytest.raises(TypeError):
        outbox.save(broken)
    assert outbox.load(first["uuid"]) == first
    assert sorted(p.name for p in outbox_dir.iterdir()) == [f"{first['uuid']}.json"]


def test_a_write_that_fails_halfway_leaves_no_document_at_all(outbox_dir):
    outbox = Outbox(outbox_dir)
    broken = example()
    broken["zzz_last"] = NotJson()
    with pytest.raises(TypeError):
        outbox.save(broken)
    assert outbox.uuids(include_rejected=True) == []
    assert list(outbox_dir.iterdir()) == []  # not even a temporary file


def test_kept_documents_are_listed_oldest_first_whatever_their_names(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    assert outbox.uuids() == KEPT_IN_THIS_ORDER


def test_push_sends_the_oldest_document_first(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    with ContractServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT)
        assert list(server.stored) == KEPT_IN_THIS_ORDER
    assert [u for u, _ in results] == KEPT_IN_THIS_ORDER
    assert outbox.uuids(include_rejected=True) == []


def test_push_stops_at_the_first_document_while_the_server_is_down(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    results = upload.push(dead_server(), TOKEN, outbox, backoff=NO_WAIT)
    assert [(u, a.outcome) for u, a in results] == [(KEPT_IN_THIS_ORDER[0], upload.UNREACHABLE)]
    assert outbox.uuids() == KEPT_IN_THIS_ORDER  # all still there, in the same order


def test_push_stops_after_the_retries_of_one_document_when_the_server_answers_503(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    with ContractServer() as server:
        server.fail_next = 1000
        results = upload.push(server.url, TOKEN, outbox, backoff=(0.0, 0.0, 0.0))
        assert server.posts == 4  # one document, tried once and retried three times
        assert server.stored == {}
    assert len(results) == 1
    assert outbox.uuids() == KEPT_IN_THIS_ORDER


def test_push_stops_when_the_token_is_refused_and_marks_nothing_rejected(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    with ContractServer() as server:
        results = upload.push(server.url, "wrong-token", outbox, backoff=NO_WAIT)
        assert server.posts == 1
    assert [a.outcome for _, a in results] == [upload.UNAUTHORIZED]
    assert outbox.uuids() == KEPT_IN_THIS_ORDER


def test_a_rejected_document_does_not_stop_the_ones_behind_it(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER)
    invalid = outbox.load(KEPT_IN_THIS_ORDER[1])
    invalid["runs"][0]["measurements"][0]["value"] = "fast"
    saved = outbox.save(invalid)
    os.utime(saved, (1_600_000_000, 1_600_000_000))  # now the oldest
    with ContractServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT)
        assert results[0][0] == KEPT_IN_THIS_ORDER[1]
        assert len(server.stored) == 4
    assert outbox.uuids(include_rejected=True) == [KEPT_IN_THIS_ORDER[1]]
    assert outbox.is_rejected(KEPT_IN_THIS_ORDER[1])


def test_a_kept_document_is_exactly_what_was_saved(outbox_dir):
    outbox = Outbox(outbox_dir)
    document = example()
    document["runs"][0]["note"] = "ünïcode — kept as written"
    path: Path = outbox.save(document)
    assert json.loads(path.read_text("utf-8")) == document
    # as written, not \u-escaped: the user reads (and fixes) kept documents
    assert "ünïcode — kept as written" in path.read_text("utf-8")


# --- found by mutation testing (docs/testing.md): each failed against a one-line
# change of outbox.py or upload.py that the tests above let through ----------------


class Watching(dict):
    """A document that looks at the outbox while it is being written."""

    def __init__(self, document: dict, outbox_dir: Path) -> None:
        super().__init__(document)
        self.outbox_dir = outbox_dir
        self.seen: list[str] = []

    def items(self):  # json.dump with an indent walks the items in Python
        self.seen = sorted(p.name for p in self.outbox_dir.iterdir())
        return super().items()


def test_a_document_is_written_under_a_hidden_temporary_name_in_the_outbox_itself(outbox_dir):
    # in the same directory, so that the final rename is atomic; hidden, so that no
    # listing (nor the user) takes it for a document
    outbox = Outbox(outbox_dir)
    document = Watching(example(), outbox_dir)

    outbox.save(document)

    assert len(document.seen) == 1
    assert document.seen[0].startswith(".")
    assert outbox.uuids(include_rejected=True) == [document["uuid"]]


def test_the_outbox_and_its_missing_parents_are_created_on_the_first_save(tmp_path):
    outbox = Outbox(tmp_path / "not" / "yet" / "outbox")
    outbox.save(example())
    assert outbox.uuids() == [example()["uuid"]]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"BENCHHUB_OUTBOX": "/srv/kept", "XDG_DATA_HOME": "/d"}, Path("/srv/kept")),
        ({"XDG_DATA_HOME": "/d"}, Path("/d/benchhub/outbox")),
        ({}, Path.home() / ".local" / "share" / "benchhub" / "outbox"),
    ],
)
def test_the_outbox_location_follows_the_environment_then_xdg_then_home(env, expected):
    from benchhub_agent.outbox import default_path

    assert default_path(env) == expected


def test_a_rejection_note_says_when_and_what_the_server_answered(outbox_dir):
    import datetime as dt

    outbox = Outbox(outbox_dir)
    outbox.save(example())
    outbox.mark_rejected(example()["uuid"], {"status": 409, "message": "other content"})

    note = json.loads(outbox.rejection_path(example()["uuid"]).read_text("utf-8"))
    assert (note["status"], note["message"]) == (409, "other content")
    rejected_at = dt.datetime.fromisoformat(note["rejected_at"])
    assert rejected_at.utcoffset() == dt.timedelta(0)
    assert abs(dt.datetime.now(dt.UTC) - rejected_at) < dt.timedelta(minutes=5)


def test_removing_a_rejected_document_removes_its_note_too(outbox_dir):
    outbox = Outbox(outbox_dir)
    outbox.save(example())
    outbox.mark_rejected(example()["uuid"], {"status": 400})

    outbox.remove(example()["uuid"])

    assert list(outbox_dir.iterdir()) == []


def test_an_unreadable_document_is_reported_and_the_ones_behind_it_still_go(outbox_dir):
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER[:3])
    broken = outbox.document_path(KEPT_IN_THIS_ORDER[0])
    broken.write_text('{"uuid": "half a docu', "utf-8")
    os.utime(broken, (1_600_000_000, 1_600_000_000))  # still the oldest
    with ContractServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT)
        assert sorted(server.stored) == sorted(KEPT_IN_THIS_ORDER[1:3])
    first_uuid, first = results[0]
    assert (first_uuid, first.outcome) == (KEPT_IN_THIS_ORDER[0], upload.REJECTED)
    assert first.message.startswith("unreadable: ")
    assert [u for u, _ in results] == KEPT_IN_THIS_ORDER[:3]
    assert outbox.uuids() == [KEPT_IN_THIS_ORDER[0]]  # kept for the user to fix


def test_push_waits_as_told_between_attempts_not_as_the_environment_says(outbox_dir, monkeypatch):
    monkeypatch.setenv("BENCHHUB_BACKOFF", "0,0,0,0,0")  # would mean six attempts
    outbox = Outbox(outbox_dir)
    keep_in_order(outbox, KEPT_IN_THIS_ORDER[:2])
    with ContractServer() as server:
        server.fail_next = 1000
        upload.push(server.url, TOKEN, outbox, backoff=(0.0,))
        assert server.posts == 2  # the first document, tried once and retried once
        server.posts = 0
        upload.send_and_keep(server.url, TOKEN, example(), outbox, backoff=(0.0, 0.0))
        assert server.posts == 3
        server.posts = 0
        upload.submit(server.url, TOKEN, example())  # no backoff given: the environment's
        assert server.posts == 6
