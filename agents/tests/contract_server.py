"""An in-process HTTP server that follows the BenchHub API contract the agent is written to.

It stands in for the Django server in the agent's own tests (the package is
tested without the site); tests/agent/ checks the agent against the real one.
It validates with the same schema and keeps documents by uuid exactly as the
contract says: 201 new, 200 same content again, 409 same uuid other content,
400 invalid, 401 bad token, and 503 (or ``fail_status``) for as many requests as
told to fail, with the ``Retry-After`` it is given (none by default, as a proxy's).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from benchhub_contract.schema import validation_errors

TOKEN = "good-token"


class ContractServer:
    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        self.posts = 0
        self.fail_next = 0
        self.fail_status = 503
        self.retry_after: str | None = None
        self.runs: dict[str, dict[str, Any]] = {}
        self.baselines: list[dict[str, Any]] = []
        self.rank_queries: list[dict[str, list[str]]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ContractServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def reply(self, status: int, body: Any, retry_after: str | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                server.posts += 1
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if server.fail_next > 0:
                    server.fail_next -= 1
                    error = {"code": "unavailable", "message": "later"}
                    return self.reply(server.fail_status, {"error": error}, server.retry_after)
                if self.headers.get("Authorization") != f"Token {TOKEN}":
                    return self.reply(401, {"error": {"code": "auth", "message": "bad token"}})
                document = json.loads(body)
                errors = validation_errors(document)
                if errors:
                    details = [e.as_dict() for e in errors]
                    error = {"code": "invalid", "message": "invalid document", "details": details}
                    return self.reply(400, {"error": error})
                known = server.stored.get(document["uuid"])
                url = f"{server.url}/submissions/{document['uuid']}/"
                if known is None:
                    server.stored[document["uuid"]] = document
                    return self.reply(201, {"url": url})
                if known == document:
                    return self.reply(200, {"url": url})
                error = {"code": "conflict", "message": "uuid already used for other content"}
                return self.reply(409, {"error": error})

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                if parts.path in server.runs:
                    return self.reply(200, server.runs[parts.path])
                if parts.path == "/api/v1/baselines/":
                    return self.reply(200, {"results": server.baselines})
                if parts.path == "/api/v1/baselines/rank/":
                    server.rank_queries.append(query)
                    value = float(query["value"][0])
                    # Percentile among ten made-up results 100, 200, … 1000.
                    below = sum(1 for v in range(100, 1001, 100) if v < value)
                    return self.reply(200, {"n": 10, "percentile": below * 10.0})
                return self.reply(404, {"error": {"code": "not_found", "message": "no such"}})

        return Handler
