"""docs/operations.md's table of settings names every environment variable
that benchhub/settings.py and gunicorn.conf.py read, with the default the
code has (where that is a plain value and compose does not set its own),
and no variable that nothing reads any more."""

from __future__ import annotations

import ast
import operator
import re

import yaml

from tests.live import ROOT

# benchhub/lib/env's readers, and get: os.environ.get
READERS = {
    *("envstr", "envint", "envfloat", "envbool", "envchoice", "envlist", "envrate"),
    *("envurl", "envlogfile", "get"),
}
ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


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
        found[first.value] = plain(node.args[1]) if len(node.args) > 1 else None
    return found


def plain(node: ast.expr) -> object:
    """A default written as a value, or as arithmetic of numbers (2 * 1024 *
    1024); None when it is computed from anything else."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        left, right = plain(node.left), plain(node.right)
        if all(isinstance(n, int) and not isinstance(n, bool) for n in (left, right)):
            return ARITHMETIC[type(node.op)](left, right)
    return None


def settings_table() -> dict[str, str]:
    """Each variable of the table → its default: the row's default cell, or
    in a row of several variables the cell's part at the variable's place
    ("2, 4" for `GUNICORN_WORKERS`, `GUNICORN_THREADS`)."""
    text = (ROOT / "docs/operations.md").read_text()
    table = text[text.index("| variable | default | |") :].split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines()[2:]:
        names, default = line.strip("|").split(" | ")[:2]
        found = re.findall(r"`([A-Z][A-Z0-9_]+)`", names)
        defaults = default.strip().split(", ") if len(found) > 1 else [default.strip()]
        assert len(defaults) == len(found), f"one default per variable: {line}"
        rows.update(zip(found, defaults, strict=True))
    return rows


def documented(default: str, spelled_default: str) -> bool:
    """The table's default is the code's, alone or followed by a gloss
    ("2097152 (2 MiB)"): "300" is not "30", nor "25" "2"."""
    default = default.replace("`", "")
    return default == spelled_default or default.startswith(spelled_default + " ")


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


def compose_reads() -> set[str]:
    """The variables docker-compose.yml takes from the environment or .env
    (``${POSTGRES_PASSWORD:?…}``)."""
    return set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (ROOT / "docker-compose.yml").read_text()))


def code_reads() -> dict[str, object]:
    return variables_read(ROOT / "benchhub/settings.py") | variables_read(ROOT / "gunicorn.conf.py")


def test_every_variable_the_code_reads_is_in_the_table_with_its_default():
    read = code_reads()
    table = settings_table()

    # the reading of the code and of the table works
    assert "BENCHHUB_BASELINES_SWEEP_SECONDS" in read
    assert isinstance(read["BENCHHUB_MAX_UPLOAD_BYTES"], int)  # 2 * 1024 * 1024
    assert "," not in table["GUNICORN_WORKERS"]  # a row of two variables, two defaults
    missing = sorted(set(read) - set(table))
    assert not missing, f"not in docs/operations.md's table: {missing}"
    wrong = {
        name: (spelled(default), table[name])
        for name, default in read.items()
        if default is not None
        and name not in compose_sets()
        and not documented(table[name], spelled(default))
    }
    assert not wrong, f"defaults in the code vs the table: {wrong}"


def test_every_variable_in_the_table_is_read_by_the_code_or_compose():
    """A row left behind when the code stopped reading its variable tells an
    operator to set something that does nothing."""
    read = set(code_reads()) | compose_reads()

    # the reading of compose works
    assert "POSTGRES_PASSWORD" in compose_reads()
    stale = sorted(set(settings_table()) - read)
    assert not stale, f"in docs/operations.md's table, but nothing reads them: {stale}"
