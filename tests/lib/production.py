"""The production environment the settings tests start manage.py with: behind
an HTTPS proxy, on a public host, with a key nobody can guess."""

from __future__ import annotations

import secrets
import subprocess

from tests.deploy import servers as deploy_servers

STRONG_KEY = secrets.token_urlsafe(50)
PRODUCTION = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "benchhub.example.org",
    "SECRET_KEY": STRONG_KEY,
    "BENCHHUB_HTTPS_PROXY": "true",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return deploy_servers.manage({**deploy_servers.inherited_environment(), **env}, *args)
