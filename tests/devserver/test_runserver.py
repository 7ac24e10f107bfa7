"""manage.py runserver, the embedded default's server: staticfiles' command,
with each accepted connection's writes sent at once (TCP_NODELAY)."""

from __future__ import annotations

import socket

from django.core.management import get_commands, load_command_class

from benchhub.devserver.management.commands.runserver import NoDelayWSGIServer


def test_runserver_is_the_projects_which_still_serves_static_files():
    assert get_commands()["runserver"] == "benchhub.devserver"
    command = load_command_class("benchhub.devserver", "runserver")
    assert command.server_cls is NoDelayWSGIServer
    options = [action.dest for action in command.create_parser("manage.py", "runserver")._actions]
    assert "use_static_handler" in options and "insecure_serving" in options


def test_an_accepted_connection_sends_without_waiting_for_acknowledgements():
    server = NoDelayWSGIServer(("127.0.0.1", 0), None, bind_and_activate=True)
    try:
        with socket.create_connection(server.server_address, timeout=5) as client:
            # the client's own socket keeps the system default: Nagle on
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            accepted, _ = server.get_request()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        server.server_close()
