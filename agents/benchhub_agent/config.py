"""Where the agent sends runs and with which token: option, then environment, then file.

The file is ``~/.config/benchhub/agent.toml`` (``$XDG_CONFIG_HOME`` honoured,
``$BENCHHUB_CONFIG`` overrides the path)::

    server = "https://benchhub.example.org"
    token = "…"
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit


class ConfigError(RuntimeError):
    pass


@dataclass(frozen=True)
class Settings:
    server: str | None
    token: str | None

    def require(self) -> tuple[str, str]:
        """Server and token, or an error saying where each can come from."""
        missing = []
        if not self.server:
            missing.append("the server (--server, BENCHHUB_SERVER or 'server' in the config file)")
        if not self.token:
            missing.append("a token (--token, BENCHHUB_TOKEN or 'token' in the config file)")
        if missing:
            raise ConfigError(
                f"uploading needs {' and '.join(missing)}; config file: {config_path()}"
            )
        return self.server.rstrip("/"), self.token  # type: ignore[union-attr,return-value]


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("BENCHHUB_CONFIG"):
        return Path(env["BENCHHUB_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "benchhub" / "agent.toml"


def read_config_file(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def load_settings(
    server: str | None = None, token: str | None = None, env: Mapping[str, str] = os.environ
) -> Settings:
    """The settings, the server address checked here: before a benchmark runs,
    not when its result is about to be sent."""
    path = config_path(env)
    file = read_config_file(path)
    for given, source in (
        (server, "--server"),
        (env.get("BENCHHUB_SERVER"), "BENCHHUB_SERVER"),
        (_text(file.get("server")), f"'server' in {path}"),
    ):
        if given:
            check_server_address(given, source)
            break
    return Settings(
        server=server or env.get("BENCHHUB_SERVER") or _text(file.get("server")),
        token=token or env.get("BENCHHUB_TOKEN") or _text(file.get("token")),
    )


def check_server_address(address: str, source: str) -> None:
    """Raise ConfigError naming ``source`` unless ``address`` is an http(s) site address."""
    expected = "expected the site's address, e.g. https://benchhub.example"
    parts = urlsplit(address)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ConfigError(f"{source} {address!r}: not a port number; {expected}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{source} {address!r} is not an http(s) address; {expected}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError(
            f"{source} {address!r}: an address with ?query, #fragment or user@ is not a "
            f"site's address; {expected}"
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
