"""What marks a document rejected: only BenchHub's own refusal. A page from a
proxy or another site at a wrong address leaves the document to send again."""

from __future__ import annotations

import argparse

import pytest
from _upload_servers import example
from benchhub_agent import upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN

NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n"
    b"</body>\r\n</html>\r\n" + b"<!-- a padding to disable MSIE friendly error page -->\r\n" * 6
)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, NGINX_404),
        (404, b'{"error": {"code": "not_found", "message": "no such page"}}'),
        (405, b'{"detail": "Method \\"POST\\" not allowed."}'),
        (400, b"<html><body><h1>400 Bad request</h1>Your browser sent an invalid request."),
        (413, b"<html><head><title>413 Request Entity Too Large</title></head></html>"),
        (200, b"<!doctype html><title>Welcome to our shop</title>"),
    ],
)
def test_an_answer_not_from_the_upload_endpoint_keeps_the_document_unmarked(
    scripted, outbox_dir, status, body
):
    base, answers = scripted
    answers.append((status, body))
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base + "/wrong/path", TOKEN, example(), outbox, backoff=())

    assert (sent.outcome, sent.status) == (upload.MISDIRECTED, status)
    assert outbox.uuids() == [example()["uuid"]]  # a plain push sends it again
    assert not outbox.is_rejected(example()["uuid"])
    described = sent.describe()
    assert "\n" not in described and "<" not in described
    assert f"{base}/wrong/path/api/v1/submissions/ answered HTTP {status}" in described


def test_a_wrong_path_stops_the_push_and_marks_none_of_the_documents(scripted, outbox_dir):
    base, answers = scripted
    outbox = Outbox(outbox_dir)
    for index in range(3):
        document = example()
        document["uuid"] = f"0b5e6a3c-7d1f-4c2a-9e8b-{index:012d}"
        outbox.save(document)
    answers.append((404, NGINX_404))

    results = upload.push(base + "/benchhub", TOKEN, outbox, backoff=())

    assert [answer.outcome for _, answer in results] == [upload.MISDIRECTED]
    assert len(outbox.uuids()) == 3


def test_a_refusal_in_benchhubs_shape_still_marks_the_document_rejected(scripted, outbox_dir):
    base, answers = scripted
    answers.append(
        (400, b'{"error": {"code": "invalid_document", "message": "The document has 1 error.",'
              b' "details": [{"path": "$.runs", "message": "too short"}]}}')
    )  # fmt: skip
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base, TOKEN, example(), outbox, backoff=())

    assert sent.outcome == upload.REJECTED
    assert outbox.is_rejected(example()["uuid"])


def test_a_409_page_from_elsewhere_does_not_pass_for_an_earlier_import(scripted, outbox_dir):
    # Only BenchHub's own 409 means "this output is stored already"; a proxy's
    # page must not get the import's document removed from the outbox.
    from benchhub_agent import commands

    base, answers = scripted
    answers.append((409, b"<html><title>409 Conflict</title><body>upstream busy</body></html>"))
    outbox = Outbox(outbox_dir)
    document = example()
    document["source"] = {"kind": "import", "tool": "pgbench"}
    args = argparse.Namespace(dry_run=False, upload=True, server=base, token=TOKEN)

    code = commands.deliver(document, args, table_shown=False)

    assert code == commands.EXIT_KEPT
    assert outbox.uuids() == [document["uuid"]]
