"""benchmarks/compare_mix.py's visitors against a server that closes a
kept-alive connection after each answer without saying so, as gunicorn does
once its keepalive has passed while a visitor thinks: that is no error of the
site, and the next request is asked again on a new connection."""

from __future__ import annotations

import http.server
import importlib.util
import threading
import time

from django.conf import settings

_spec = importlib.util.spec_from_file_location(
    "compare_mix", settings.BASE_DIR / "benchmarks" / "compare_mix.py"
)
compare_mix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_mix)


class ClosingHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the client keeps the connection

    def do_GET(self) -> None:
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True  # closed without "Connection: close"

    def log_message(self, *args) -> None:
        pass


def test_a_visitor_asks_again_when_the_server_closed_its_kept_alive_connection():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ClosingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        timings = compare_mix.Timings()
        compare_mix.visitor(
            server.server_address[1],
            time.monotonic() + 0.5,
            0.02,
            timings,
            seed=3,
            weights=[1.0] * len(compare_mix.COMPARISONS),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert timings.errors == []
    assert len(timings.first) + len(timings.again) > 3
