"""runserver (with static files, as django.contrib.staticfiles serves them)
whose connections send each write at once (TCP_NODELAY).

Django's development server writes an answer's status and headers, then its
body, in two sends. With Nagle's algorithm on (the socket default) the body
waits for the client to acknowledge the headers, and a client delays that
acknowledgement by up to 40 ms on Linux: every answer of the embedded default
took at least 40 ms, whatever its work (one uploader: 48 ms a request for 8
ms of CPU; docs/performance.md). gunicorn, the deployed server, sets the
option itself.
"""

from __future__ import annotations

import socket

from django.contrib.staticfiles.management.commands.runserver import (
    Command as StaticFilesRunserverCommand,
)
from django.core.servers.basehttp import WSGIServer


class NoDelayWSGIServer(WSGIServer):
    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = super().get_request()
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class Command(StaticFilesRunserverCommand):
    server_cls = NoDelayWSGIServer

    def inner_run(self, *args, **options):
        # The serving process (the autoreloader's child): baselines marked
        # and left by an earlier process are refreshed now, not at the next
        # change (tasks run in-process here; a worker does this on a broker).
        from benchhub.baselines.tasks import catch_up_in_process

        catch_up_in_process()
        return super().inner_run(*args, **options)
