"""Uploads and the outbox: nothing is lost, nothing is stored twice."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "docs" / "examples" / "select-update-submission.json"
)
NO_WAIT = (0.0, 0.0)


def example(uuid: str = "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10") -> dict:
    doc = json.loads(EXAMPLE.read_text())
    doc["uuid"] = uuid
    return doc


def dead_server() -> str:
    """A URL on a local port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_document_the_server_cannot_get_stays_in_the_outbox(outbox_dir):
    outbox = Outbox(outbox_dir)
    answer = upload.send_and_keep(dead_server(), TOKEN, example(), outbox, backoff=NO_WAIT)
    assert answer.outcome == upload.UNREACHABLE
    assert outbox.uuids() == [example()["uuid"]]
    assert outbox.load(example()["uuid"]) == example()


def test_push_delivers_the_kept_documents_once_the_server_is_up(outbox_dir):
    outbox = Outbox(outbox_dir)
    upload.send_and_keep(dead_server(), TOKEN, example(), outbox, backoff=NO_WAIT)
    with ContractServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT)
        assert [(u, a.outcome) for u, a in results] == [(example()["uuid"], upload.CREATED)]
        assert list(server.stored) == [example()["uuid"]]
        assert outbox.uuids(include_rejected=True) == []


def test_a_resent_document_is_stored_once(outbox_dir):
    with ContractServer() as server:
        first = upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        again = upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        assert (first.outcome, again.outcome) == (upload.CREATED, upload.STORED)
        assert first.url == again.url
        assert len(server.stored) == 1


def test_server_errors_are_retried_with_backoff(outbox_dir):
    with ContractServer() as server:
        server.fail_next = 2
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.01, 0.01))
        assert answer.outcome == upload.CREATED
        assert server.posts == 3


def test_a_refused_document_is_kept_marked_and_not_pushed_again(outbox_dir):
    outbox = Outbox(outbox_dir)
    changed = example()
    changed["runs"][0]["measurements"][0]["value"] = 1.0
    with ContractServer() as server:
        upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        answer = upload.send_and_keep(server.url, TOKEN, changed, outbox, backoff=NO_WAIT)
        assert (answer.outcome, answer.status) == (upload.REJECTED, 409)
        assert "other content" in answer.message
        assert outbox.is_rejected(changed["uuid"])
        assert outbox.load(changed["uuid"]) == changed  # nothing lost
        posts = server.posts
        assert upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT) == []
        assert server.posts == posts
        retried = upload.push(server.url, TOKEN, outbox, include_rejected=True, backoff=NO_WAIT)
        assert [a.status for _, a in retried] == [409]


def test_the_servers_field_errors_are_shown(outbox_dir):
    invalid = example()
    invalid["runs"][0]["measurements"][0]["value"] = "fast"
    with ContractServer() as server:
        answer = upload.submit(server.url, TOKEN, invalid, backoff=NO_WAIT)
    assert answer.status == 400
    assert answer.details[0]["path"] == "$.runs[0].measurements[0].value"
    assert "$.runs[0].measurements[0].value" in answer.describe()


def test_a_wrong_token_does_not_mark_the_document_rejected(outbox_dir):
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        answer = upload.send_and_keep(server.url, "wrong", example(), outbox, backoff=NO_WAIT)
    assert (answer.outcome, answer.status) == (upload.UNAUTHORIZED, 401)
    assert outbox.uuids() == [example()["uuid"]]  # the document is fine: push will retry it


def test_outbox_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHHUB_OUTBOX", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Outbox().path == tmp_path / "benchhub" / "outbox"


@pytest.mark.parametrize("status", [413, 400])
def test_client_errors_are_rejections(status):
    answer = upload._answer(status, {"error": {"code": "x", "message": "too big"}})
    assert answer.outcome == upload.REJECTED and answer.message == "too big"
