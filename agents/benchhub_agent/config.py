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
    file = read_config_file(config_path(env))
    return Settings(
        server=server or env.get("BENCHHUB_SERVER") or _text(file.get("server")),
        token=token or env.get("BENCHHUB_TOKEN") or _text(file.get("token")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
