"""Uploads and the outbox: nothing is lost, nothing is stored twice; retries,
their waits, and the server's address as given."""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

import pytest
from _upload_servers import NO_WAIT, Scripted, dead_server, example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer


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


def test_a_server_address_with_a_trailing_slash_is_the_same_server(outbox_dir):
    with ContractServer() as server:
        answer = upload.submit(server.url + "/", TOKEN, example(), backoff=NO_WAIT)
        assert (answer.outcome, list(server.stored)) == (upload.CREATED, [example()["uuid"]])


def test_waits_between_attempts_are_the_backoff_in_order(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next = 1000
        upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.02, 0.03))
    assert waits == [0.01, 0.02, 0.03]


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, (1.0, 2.0, 4.0)), ({"BENCHHUB_BACKOFF": "0.5, 3,"}, (0.5, 3.0))],
)
def test_the_waits_come_from_the_environment_when_set(env, expected):
    assert upload.default_backoff(env) == expected


def test_a_refused_documents_note_keeps_the_servers_whole_answer(outbox_dir):
    invalid = example()
    invalid["runs"][0]["measurements"][0]["value"] = "fast"
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        upload.send_and_keep(server.url, TOKEN, invalid, outbox, backoff=NO_WAIT)
    note = json.loads(outbox.rejection_path(invalid["uuid"]).read_text("utf-8"))
    assert {k: note[k] for k in ("outcome", "status")} == {"outcome": "rejected", "status": 400}
    assert note["message"]
    assert note["details"][0]["path"] == "$.runs[0].measurements[0].value"


@pytest.mark.parametrize("slash", ["/", ""])
def test_a_server_under_a_path_gets_the_submission_at_that_path(scripted, slash):
    # A BenchHub behind a proxy under /lab-X: the document goes to
    # /lab-X/api/v1/submissions/, once the trailing slash is taken off, and
    # nothing else of the address is stripped (not the X, not the scheme's //).
    base, answers = scripted
    answers.append((201, b'{"url": "/lab-X/api/v1/submissions/1/"}'))

    answer = upload.submit(f"{base}/lab-X{slash}", TOKEN, example(), backoff=())

    assert answer.outcome == upload.CREATED
    assert [(method, path) for method, path, _ in Scripted.seen] == [
        ("POST", "/lab-X/api/v1/submissions/")
    ]


def test_a_server_that_refuses_the_first_connection_and_answers_the_next_gets_the_document(
    monkeypatch,
):
    # Bound but not yet listening: the first attempt is refused; the server
    # starts listening during the wait before the second attempt.
    Scripted.answers[:] = [(201, b'{"url": "/api/v1/submissions/1/"}')]
    Scripted.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted, bind_and_activate=False)
    server.server_bind()
    waits: list[float] = []

    def start_during_the_wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:
            server.server_activate()
            threading.Thread(target=server.serve_forever, daemon=True).start()

    monkeypatch.setattr(upload.time, "sleep", start_during_the_wait)
    try:
        answer = upload.submit(
            f"http://127.0.0.1:{server.server_address[1]}", TOKEN, example(), backoff=(0.5, 0.5)
        )
    finally:
        if waits:
            server.shutdown()
        server.server_close()

    assert (answer.outcome, answer.status, answer.url) == (
        upload.CREATED,
        201,
        "/api/v1/submissions/1/",
    )
    assert waits == [0.5]
    assert len(Scripted.seen) == 1
