"""How the agent reads the server's answer to an upload (created, stored,
refused, not reachable, not HTTP at all) and describes it in a line."""

from __future__ import annotations

import socket
import threading

import pytest
from _upload_servers import CREATED_BODY, CREATED_HEAD, _read_request, dead_server, example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer


@pytest.mark.parametrize("status", [413, 400])
def test_client_errors_are_rejections(status):
    answer = upload._answer(status, {"error": {"code": "x", "message": "too big"}})
    assert answer.outcome == upload.REJECTED and answer.message == "too big"


# --- found by mutation testing (docs/testing.md): each failed against a one-line
# change of upload.py that the other upload tests let through -----------------------

LONG_PAGE = "<html>" + "x" * 600


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (201, {"url": "/api/s/1/", "html_url": "/s/1/"}, upload.Answer(
            upload.CREATED, 201, "/api/s/1/", html_url="/s/1/")),
        (200, {"url": "/api/s/1/", "html_url": "/s/1/"}, upload.Answer(
            upload.STORED, 200, "/api/s/1/", html_url="/s/1/")),
        (403, {"detail": "not yours"}, upload.Answer(
            upload.UNAUTHORIZED, 403, message="not yours")),
        # A 404 is a wrong address, never a verdict on the document.
        (404, {"error": {"code": "not_found", "message": ""}}, upload.Answer(
            upload.MISDIRECTED, 404, message="not_found")),
        (429, {"error": {"code": "throttled", "message": "slow down"}}, upload.Answer(
            upload.UNREACHABLE, 429, message="slow down")),
        (500, LONG_PAGE, upload.Answer(
            upload.UNREACHABLE, 500, message="an HTML page: " + "x" * 99 + "…")),
        (409, {"error": {}}, upload.Answer(
            upload.REJECTED, 409, message="this uuid is already stored with different content")),
        (400, {"error": {"message": "bad", "details": [{"path": "$.x", "message": "m"}, "?"]}},
         upload.Answer(upload.REJECTED, 400, message="bad",
                       details=[{"path": "$.x", "message": "m"}])),
    ],
)  # fmt: skip
def test_each_kind_of_answer_is_read_whole(status, payload, expected):
    assert upload._answer(status, payload) == expected


def test_an_unreachable_server_is_named_by_the_systems_reason(outbox_dir):
    answer = upload.submit(dead_server(), TOKEN, example(), backoff=())
    assert (answer.outcome, answer.status) == (upload.UNREACHABLE, None)
    assert answer.message == str(ConnectionRefusedError(111, "Connection refused"))


def test_a_server_that_does_not_answer_or_refuses_the_token_is_named(outbox_dir):
    # A typo in --server, or a config file's server forgotten: the agent
    # said "server not reachable" without saying which.
    server = dead_server()
    answer = upload.submit(server + "/", TOKEN, example(), backoff=())
    with ContractServer() as live:
        refused = upload.submit(live.url, "bh_wrong", example(), backoff=())

    assert answer.describe().startswith(f"server {server} not reachable (no answer): ")
    assert refused.describe().startswith(f"the server {live.url} refused the token (HTTP 401)")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "BadStatusLine: SSH-2.0-OpenSSH_9.6"),
        (CREATED_HEAD + CREATED_BODY[:5], "IncompleteRead: IncompleteRead(5 bytes read, "),
    ],
)
def test_an_answer_that_is_not_http_is_no_answer_and_the_document_is_kept(
    outbox_dir, answer, reason
):
    """Something other than BenchHub on the port (--server on a wrong one), or
    an answer cut short: http.client's own errors ended the agent with a
    traceback before, the outbox push before a run included."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            _read_request(connection)
            connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    outbox = Outbox(outbox_dir)
    with listener:
        sent = upload.send_and_keep(
            f"http://127.0.0.1:{listener.getsockname()[1]}", TOKEN, example(), outbox, backoff=()
        )

    assert (sent.outcome, sent.status) == (upload.UNREACHABLE, None)
    assert sent.message.startswith(f"not an HTTP answer ({reason}")
    assert outbox.uuids() == [example()["uuid"]]


@pytest.mark.parametrize(
    ("status", "text"),
    [
        ("pending", "stored: /s/1/ (pending: only you see it, signed in, "
                    "until a moderator approves it)"),
        ("approved", "stored: /s/1/"),  # a trusted submitter's: public at once
        ("rejected", "stored: /s/1/ (rejected)"),
        (None, "stored: /s/1/"),
    ],
)  # fmt: skip
def test_a_stored_upload_says_whether_it_waits_for_a_moderator(status, text):
    # The link of a first upload answered 404 in a browser not signed in,
    # and the agent had said only "stored".
    body = {"url": "/api/s/1/", "html_url": "/s/1/", "status": status}

    assert upload._answer(201, body).describe() == text


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (upload.Answer(upload.CREATED, 201, "/api/s/1/", html_url="/s/1/"), "stored: /s/1/"),
        (upload.Answer(upload.STORED, 200, "/api/s/1/"), "already stored: /api/s/1/"),
        (upload.Answer(upload.STORED, 200), "already stored"),
        (upload.Answer(upload.REJECTED, 413, message="too big"),
         "rejected by the server (HTTP 413): too big"),
        (upload.Answer(upload.UNAUTHORIZED, 401, message="bad token"),
         "the server refused the token (HTTP 401): bad token"),
        (upload.Answer(upload.UNREACHABLE, message="timed out"),
         "server not reachable (no answer): timed out"),
        (upload.Answer(upload.REJECTED, 400, message="invalid", details=[
            {"path": "$.a", "message": "x"}, {"message": "y"}]),
         "rejected by the server (HTTP 400): invalid\n  $.a: x\n  : y"),
    ],
)  # fmt: skip
def test_each_answer_is_described_in_one_line_and_its_details_below(answer, text):
    assert answer.describe() == text


def test_a_text_answer_that_mentions_detail_is_its_own_message():
    # DRF's {"detail": …} is looked for in JSON objects only
    answer = upload._answer(502, "<h1>Bad gateway</h1><p>detail: upstream</p>")
    assert answer == upload.Answer(
        upload.UNREACHABLE, 502, message="an HTML page: Bad gateway detail: upstream"
    )


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (upload.Answer(upload.CREATED, 201, "/api/s/1/"), "stored: /api/s/1/"),
        (upload.Answer(upload.CREATED, 201), "stored"),
        (upload.Answer(upload.STORED, 200, "/api/s/1/", html_url="/s/1/"),
         "already stored: /s/1/"),
        (upload.Answer(upload.REJECTED, 400, message="invalid", details=[{"path": "$.b"}]),
         "rejected by the server (HTTP 400): invalid\n  $.b: "),
    ],
)  # fmt: skip
def test_an_answer_without_an_address_or_a_details_message_leaves_them_empty(answer, text):
    assert answer.describe() == text


def test_a_message_keeps_its_last_letters():
    answer = upload.Answer(upload.REJECTED, 400, message="no such engine: MAX")
    assert answer.describe() == "rejected by the server (HTTP 400): no such engine: MAX"


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("https://bench.example.org:8443/runs/5/?x=1#top", "https://bench.example.org:8443"),
        ("http://127.0.0.1:8000/api/v1/runs/7/", "http://127.0.0.1:8000"),
    ],
)
def test_the_server_of_a_run_address_is_its_scheme_and_host(url, server):
    assert upload.server_of(url) == server
