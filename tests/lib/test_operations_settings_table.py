"""docs/operations.md's table of settings names every environment variable
that benchhub/settings.py and gunicorn.conf.py read, with the default the
code has (where that is a plain value and compose does not set its own)."""

from __future__ import annotations

import ast
import re

import yaml

from tests.live import ROOT

READERS = {"envstr", "envint", "envbool", "envlist", "get"}  # get: os.environ.get


def variables_read(path) -> dict[str, object]:
    """Each variable the file reads → its default (None when the default is
    computed, or there is none)."""
    found: dict[str, object] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func
        name = name.id if isinstance(name, ast.Name) else name
        first = node.args[0]
        if name not in READERS or not isinstance(first, ast.Constant):
            continue
        if not isinstance(first.value, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]+", first.value):
            continue
        default = None
        if len(node.args) > 1:
            try:
                default = ast.literal_eval(node.args[1])
            except ValueError:
                default = None  # computed
        found[first.value] = default
    return found


def settings_table() -> dict[str, str]:
    """Each variable of the table → its row's default cell."""
    text = (ROOT / "docs/operations.md").read_text()
    table = text[text.index("| variable | default | |") :].split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines()[2:]:
        names, default = line.strip("|").split(" | ")[:2]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", names):
            rows[name] = default
    return rows


def spelled(default: object) -> str:
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        return ",".join(default)
    if default == "":
        return "empty"
    return str(default)


def compose_sets() -> set[str]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return set(compose["x-app"]["environment"])


def test_every_variable_the_code_reads_is_in_the_table_with_its_default():
    read = variables_read(ROOT / "benchhub/settings.py") | variables_read(ROOT / "gunicorn.conf.py")
    table = settings_table()

    assert "BENCHHUB_BASELINES_SWEEP_SECONDS" in read  # the reading of the code works
    missing = sorted(set(read) - set(table))
    assert not missing, f"not in docs/operations.md's table: {missing}"
    wrong = {
        name: (spelled(default), table[name])
        for name, default in read.items()
        if default is not None
        and name not in compose_sets()
        and spelled(default) not in table[name]
    }
    assert not wrong, f"defaults in the code vs the table: {wrong}"
