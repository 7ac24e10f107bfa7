"""upload.get_json, the agent's reads of the server (compare's ranks, run --like's
run): the token, the errors it raises, and Retry-After on a read."""

from __future__ import annotations

import socket

import pytest
from _upload_servers import Scripted, dead_server, example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN


def test_get_json_returns_the_payload_and_sends_the_token_without_a_body(scripted):
    base, answers = scripted
    answers.append((200, b'{"results": [{"n": 3}]}'))

    assert upload.get_json(f"{base}/api/v1/baselines/?x=1", token="t0k") == {"results": [{"n": 3}]}
    ((method, path, headers),) = Scripted.seen
    assert (method, path) == ("GET", "/api/v1/baselines/?x=1")
    assert headers["Authorization"] == "Token t0k"
    assert headers["Accept"] == "application/json"
    assert "Content-Type" not in headers and "Content-Length" not in headers


def test_get_json_without_a_token_sends_no_authorization(scripted):
    base, answers = scripted
    answers.append((200, b"[]"))
    assert upload.get_json(f"{base}/r/") == []
    assert "Authorization" not in Scripted.seen[0][2]


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, b'{"error": {"code": "not_found", "message": "no such run"}}', "no such run"),
        (201, b'{"url": "/x/"}', "{'url': '/x/'}"),  # only 200 is an answer to a GET
        (502, b"<p>no detail here</p>", "an HTML page: no detail here"),
    ],
)
def test_get_json_raises_the_status_and_the_servers_message(scripted, status, body, message):
    base, answers = scripted
    answers.append((status, body))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/api/v1/runs/5/")

    assert raised.value.status == status
    assert str(raised.value) == f"GET {base}/api/v1/runs/5/: HTTP {status}: {message}"


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        (b"<!doctype html><title>Run 5</title>", "'<!doctype html><title>Run 5</title>'"),
        (b"[" * 100_000, repr("[" * 100)),  # past the parser's recursion
    ],
)
def test_get_json_of_an_answer_that_is_not_json_raises_saying_so(scripted, body, shown):
    """The callers read an object's fields: an HTML page answered 200 (a
    run's page address given for its API one) ended the agent with an
    AttributeError, a deeply nested one with a RecursionError."""
    base, answers = scripted
    answers.append((200, body))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/runs/5/")

    assert str(raised.value) == f"GET {base}/runs/5/: the answer is not JSON: {shown}"


def test_an_upload_answered_with_json_nested_past_the_parser_keeps_the_document(
    scripted, outbox_dir
):
    base, answers = scripted
    answers.append((502, b"[" * 100_000))
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base, TOKEN, example(), outbox, backoff=())

    assert (sent.outcome, sent.status) == (upload.UNREACHABLE, 502)
    assert outbox.uuids() == [example()["uuid"]]


def test_get_json_from_a_server_nobody_runs_raises_without_a_status():
    url = f"{dead_server()}/api/v1/runs/5/"
    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(url)
    assert raised.value.status is None
    assert str(raised.value) == f"GET {url}: {ConnectionRefusedError(111, 'Connection refused')}"


def test_get_json_gives_up_after_its_timeout():
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/r/"
        with pytest.raises(upload.HttpError) as raised:
            upload.get_json(url, timeout=0.3)
    assert (raised.value.status, str(raised.value)) == (None, f"GET {url}: timed out")


@pytest.mark.parametrize("status", [503, 429])
def test_a_read_of_a_busy_server_is_asked_again_after_the_seconds_it_asks_for(
    scripted, monkeypatch, capsys, status
):
    # compare asks a rank for each measurement: a throttled token's 429 made the
    # rest of its table "-", and --like stopped, where an upload would have waited.
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    busy = (status, b'{"error": {"code": "busy", "message": "later"}}', {"Retry-After": "5"})
    answers.extend([busy, busy, (200, b'{"n": 3}')])

    assert upload.get_json(f"{base}/api/v1/baselines/rank/", backoff=(0.01, 0.01, 0.01)) == {"n": 3}
    assert (len(Scripted.seen), waits) == (3, [5.0, 5.0])
    assert capsys.readouterr().err.splitlines()[0] == (
        f"HTTP {status} from the server (later): waiting 5 s as it asks (Retry-After)"
        " before attempt 2 of 4"
    )


def test_a_read_asked_to_wait_longer_than_the_agent_waits_fails_at_once_saying_so(
    scripted, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    answers.append((503, b'{"error": {"message": "catalog incomplete"}}', {"Retry-After": "300"}))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/api/v1/runs/5/", backoff=(0.01,))

    assert (raised.value.status, len(Scripted.seen), waits) == (503, 1, [])
    assert str(raised.value) == (
        f"GET {base}/api/v1/runs/5/: HTTP 503: catalog incomplete; the server asks to be"
        " asked again in 300 s, longer than the agent waits (60 s at most)"
    )


def test_a_read_failing_without_retry_after_is_not_asked_again(scripted, monkeypatch):
    # compare goes on without the answer ("-"): a silent backoff per row would add up
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    answers.append((502, b"bad gateway"))

    with pytest.raises(upload.HttpError):
        upload.get_json(f"{base}/r/", backoff=(0.01, 0.01))

    assert (len(Scripted.seen), waits) == (1, [])
