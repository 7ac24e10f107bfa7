"""The WSGI application gunicorn runs, called as gunicorn calls it: the environ it
builds, the answer's status, headers and body, and the answer closed (which sends
Django's request_finished). Tests that call it need the ``wsgi_in_the_test_transaction``
fixture, or Django's request signals end the test's transaction."""

from __future__ import annotations

import io

from benchhub.wsgi import application


def call(
    method: str,
    path: str,
    *,
    query: str = "",
    content_type: str = "",
    body: bytes = b"",
    **headers: str,
) -> tuple[str, dict, bytes]:
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        **({"CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(len(body))} if body else {}),
        **headers,
    }
    chunks = application(environ, start_response)
    try:
        return answer["status"], answer["headers"], b"".join(chunks)
    finally:
        chunks.close()
