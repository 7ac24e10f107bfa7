"""Retry-After (the server says when to send again) and the outbox push before
a run, which waits a bounded time in all, however many documents it holds."""

from __future__ import annotations

import datetime as dt

import pytest
from _upload_servers import HangingServer, example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer

# --- Retry-After: the server says when to send it again -----------------------------


@pytest.mark.parametrize("status", [503, 429])
def test_a_busy_server_is_asked_again_after_the_seconds_it_asks_for(
    outbox_dir, monkeypatch, capsys, status
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next, server.fail_status, server.retry_after = 2, status, "5"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.02, 0.03))
    assert (answer.outcome, server.posts) == (upload.CREATED, 3)
    assert waits == [5.0, 5.0]
    told = capsys.readouterr().err.splitlines()
    assert told[0] == (
        f"HTTP {status} from the server (later): waiting 5 s as it asks (Retry-After)"
        " before attempt 2 of 4"
    )


def test_a_server_asking_for_longer_than_the_agent_waits_is_left_for_a_later_push(
    outbox_dir, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1, "300"  # catalog_incomplete's
        answer = upload.send_and_keep(server.url, TOKEN, example(), outbox, backoff=(0.01,))
    assert (answer.outcome, server.posts, waits) == (upload.UNREACHABLE, 1, [])
    assert answer.describe() == (
        f"server {server.url} not reachable (HTTP 503): later; the server asks to be sent it"
        " again in 300 s,"
        " longer than the agent waits (60 s at most)"
    )
    assert outbox.uuids() == [example()["uuid"]]


def test_the_last_attempts_retry_after_is_told(outbox_dir, monkeypatch):
    monkeypatch.setattr(upload.time, "sleep", lambda seconds: None)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1000, "1"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01,))
    assert server.posts == 2
    assert answer.message == "later; the server asks to be sent it again in 1 s"


def test_an_unreadable_retry_after_leaves_the_backoff(outbox_dir, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1, "soon"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01,))
    assert (answer.outcome, waits) == (upload.CREATED, [0.01])


NOON = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5", 5.0),
        (" 300 ", 300.0),
        ("Thu, 26 Nov 2026 12:00:30 GMT", 30.0),
        ("Thursday, 26-Nov-26 12:01:00 GMT", 60.0),  # the obsolete RFC 850 form
        ("Thu, 26 Nov 2026 12:00:30 -0000", 30.0),  # UTC without saying so
        ("Thu, 26 Nov 2026 11:00:00 GMT", 0.0),  # past: at once
        (None, None),
        ("", None),
        ("-5", None),
        ("1.5", None),
        ("²", None),
        ("Thu, 99 Nov 2026 12:00:30 GMT", None),
    ],
)
def test_retry_after_is_whole_seconds_or_an_http_date(value, seconds):
    assert upload.retry_after_seconds(value, now=NOON) == seconds


# --- the outbox before a run: a bounded wait in all -----------------------------------


def test_a_throttled_token_leaves_the_outbox_before_a_run_at_once(outbox_dir, monkeypatch):
    # It waited 60 s three times for the first document before the run started.
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    for uuid in ("00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"):
        outbox.save(example(uuid))
    patience = upload.Patience(10, when="before a run")
    with ContractServer() as server:
        server.fail_next, server.fail_status, server.retry_after = 1000, 429, "42"
        results = upload.push(server.url, TOKEN, outbox, patience=patience)

    assert (len(results), server.posts, waits) == (1, 1, [])
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (HTTP 429): later; the server asks to be sent it"
        " again in 42 s,"
        " longer than the agent waits before a run (10 s in all)"
    )
    assert len(outbox.uuids()) == 2  # neither marked: both go with the next push


def test_the_outbox_before_a_run_waits_its_patience_in_all_however_many_documents(
    outbox_dir, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    for n in range(1, 4):
        outbox.save(example(f"00000000-0000-4000-8000-00000000000{n}"))
    patience = upload.Patience(10, when="before a run")
    with ContractServer() as server:
        # each document answered 503 twice, asking 3 s: 6 s each if waited in full
        server.retry_after = "3"
        served = server.httpd.RequestHandlerClass.do_POST

        def twice_busy_then_served(handler):
            if server.posts % 3 != 2:
                server.fail_next = 1
            served(handler)

        server.httpd.RequestHandlerClass.do_POST = twice_busy_then_served
        results = upload.push(server.url, TOKEN, outbox, backoff=(1, 1, 1), patience=patience)

    assert sum(waits) <= 10
    assert waits == [3.0, 3.0, 3.0]
    assert [answer.outcome for _, answer in results] == [upload.CREATED, upload.UNREACHABLE]
    assert len(outbox.uuids()) == 2


def test_a_server_that_accepts_and_never_answers_ends_the_push_before_a_run_in_its_patience(
    outbox_dir,
):
    # Each attempt waited the 30 s time-out, four times: two minutes before the
    # run started, against a patience of 10 s that bounded only the sleeps.
    outbox = Outbox(outbox_dir)
    for n in (1, 2):
        outbox.save(example(f"00000000-0000-4000-8000-00000000000{n}"))
    patience = upload.Patience(1, when="before a run")
    with HangingServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=(1, 2, 4), patience=patience)

    assert server.accepted == 1  # no attempt after the first one used the patience up
    assert [answer.outcome for _, answer in results] == [upload.UNREACHABLE]
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (no answer): timed out; no answer within the 1 s"
        " the agent waits before a run (in all)"
    )
    assert len(outbox.uuids()) == 2  # neither marked: both go with the next push


def test_a_patience_already_spent_sends_nothing_and_says_so(outbox_dir):
    outbox = Outbox(outbox_dir)
    outbox.save(example())
    with ContractServer() as server:
        results = upload.push(
            server.url, TOKEN, outbox, patience=upload.Patience(0, when="before a run")
        )

    assert server.posts == 0
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (no answer): not sent: the 0 s the agent waits"
        " before a run (in all) are spent"
    )
    assert outbox.uuids() == [example()["uuid"]]
