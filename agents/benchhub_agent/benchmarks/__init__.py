"""The benchmarks the agent runs itself, one module each (see :mod:`.base`)."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from benchhub_contract.schema import metric_catalog


@dataclass
class Discovered:
    name: str
    module: ModuleType | None
    error: str | None = None


def discover_benchmarks() -> dict[str, Discovered]:
    """Modules of benchhub_agent.benchmarks named after a catalog entry ('-' → '_').

    A module that fails to import is listed with its error instead of
    breaking every other command.
    """
    catalog = metric_catalog()
    found: dict[str, Discovered] = {}
    for info in pkgutil.iter_modules(__path__):
        name = info.name.replace("_", "-")
        if info.name.startswith("_") or name not in catalog:
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except Exception as exc:  # any import failure: report it when this benchmark is asked for
            found[name] = Discovered(name, None, f"{type(exc).__name__}: {exc}")
            continue
        found[name] = Discovered(name, module)
    return dict(sorted(found.items()))
