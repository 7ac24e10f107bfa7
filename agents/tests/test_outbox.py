"""The outbox: whole documents or none, sent oldest first, kept while the server is down."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer
from test_upload import NO_WAIT, dead_server, example

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
