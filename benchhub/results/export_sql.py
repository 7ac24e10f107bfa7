"""The measurement export (benchhub/results/exports.py) written by
PostgreSQL: the SQL that formats each line exactly as the Python path does,
so that COPY streams the file and Python only passes its bytes on.

What Python prints, and how the SQL matches it:

- a float: ``repr`` (``100.0``, ``1e-05``, ``1234000000000000.0``,
  ``1e+16``). PostgreSQL's float8 output (``extra_float_digits`` 1, set
  for the statement) has the same shortest digits but writes ``100``, and
  switches to an exponent at 1e15 where Python does at 1e16: ``_float``
  adds the ``.0`` and writes the exponent-15 case out.
- JSON (``json.dumps(value, sort_keys=True)`` of what ``json.loads`` read
  from jsonb): the separators are jsonb's; keys sorted by code point (jsonb
  sorts them by length first); a jsonb number with a point was a Python
  float (``_json_number``), one without an int; every character from DEL
  up escaped as ``\\uXXXX`` (``ensure_ascii``), above U+FFFF as a surrogate
  pair. The document schema holds parameters to one level of scalars and
  samples to numbers; deeper values are printed as jsonb writes them.
- text: a cell that a spreadsheet would read as a formula gets a leading
  ``'`` unless it spells a number (``csv_cell``); a cell with a comma,
  quote, CR or LF is quoted with its quotes doubled; an empty string and
  NULL are both an empty cell.

Each line is one text value that COPY sends in its text format, where a
backslash, CR, LF, tab, BS, FF and VT are escaped: ``exports`` undoes that
and ends lines with CRLF, as the csv module does.

The run's columns (26 of the 42) are formatted once per run, in a
MATERIALIZED CTE of the runs the query reaches, not once per measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

# Python's float() of a number written with more than this is infinite:
# the half-way point between the largest double and 2**1024 rounds up.
_FLOAT_LIMIT = 2**1024 - 2**970

# csv_cell's formula starts, and filters._NUMBER (parameter_number's rule).
_FORMULA = r"^[-=+@\t\r]"
_NUMBER = r"^-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?$"


def _float(value: str, text: str | None = None, *, json: bool = False) -> str:
    """Python's repr of the float8 ``value`` (json.dumps' with ``json``),
    given as a number and (if it is at hand, computed once) as PostgreSQL's
    text of it."""
    text = text or f"({value})::text"
    infinite = ("Infinity", "-Infinity", "NaN") if json else ("inf", "-inf", "nan")
    return f"""(CASE
        WHEN {value} = trunc({value}) AND abs({value}) < 1e15 THEN {text} || '.0'
        WHEN abs({value}) >= 1e15 AND abs({value}) < 1e16 THEN (
            SELECT CASE WHEN strpos(fixed, '.') > 0 THEN fixed ELSE fixed || '.0' END
            FROM (SELECT ({text})::numeric::text AS fixed) AS written)
        WHEN {value} = 'Infinity' THEN '{infinite[0]}'
        WHEN {value} = '-Infinity' THEN '{infinite[1]}'
        WHEN {value} = 'NaN' THEN '{infinite[2]}'
        ELSE {text} END)"""  # noqa: S608 -- our own SQL of column names


def _json_number(value: str) -> str:
    """Python's json.dumps of json.loads of the jsonb number ``value``: an
    int as written, a float (written with a point) by repr."""
    return f"""(CASE WHEN strpos(({value})::text, '.') = 0 THEN ({value})::text
        ELSE {_float(f"({value})::float8")} END)"""


def _ascii_json(text: str) -> str:
    r"""jsonb's JSON text ``text`` (of a string) with every character from
    DEL up escaped as Python's ensure_ascii does; jsonb already escapes the
    rest alike (quote, backslash, \b \f \n \r \t, other controls as \u00xx)."""
    return f"""(CASE WHEN octet_length({text}) = length({text}) AND strpos({text}, chr(127)) = 0
        THEN {text} ELSE (
            SELECT string_agg(CASE
                WHEN ascii(c) < 127 THEN c
                WHEN ascii(c) < 65536 THEN '\\u' || lpad(to_hex(ascii(c)), 4, '0')
                ELSE '\\u' || to_hex(55296 + ((ascii(c) - 65536) >> 10))
                    || '\\u' || to_hex(56320 + ((ascii(c) - 65536) & 1023))
                END, '' ORDER BY n)
            FROM regexp_split_to_table({text}, '') WITH ORDINALITY AS chars(c, n)
        ) END)"""  # noqa: S608 -- our own SQL of column names


def _json_scalar(value: str) -> str:
    """One jsonb value inside an object or array, as json.dumps writes it."""
    return f"""(CASE jsonb_typeof({value})
        WHEN 'number' THEN {_json_number(value)}
        WHEN 'string' THEN {_ascii_json(f"({value})::text")}
        ELSE ({value})::text END)"""


def _json(value: str) -> str:
    """json.dumps(json.loads(jsonb), sort_keys=True) of an object or array
    of scalars (the schema's parameters and samples)."""
    return f"""(CASE jsonb_typeof({value})
        WHEN 'object' THEN (
            SELECT '{{' || coalesce(string_agg(
                {_ascii_json("to_jsonb(k)::text")} || ': ' || {_json_scalar("v")},
                ', ' ORDER BY k COLLATE "C"), '') || '}}'
            FROM jsonb_each({value}) AS pairs(k, v))
        ELSE (
            SELECT '[' || coalesce(string_agg({_json_scalar("v")}, ', ' ORDER BY n), '') || ']'
            FROM jsonb_array_elements({value}) WITH ORDINALITY AS items(v, n))
        END)"""  # noqa: S608 -- our own SQL of column names


def _needs_quotes(text: str) -> str:
    """Whether the csv module quotes the cell ``text`` (QUOTE_MINIMAL)."""
    return f"""(strpos({text}, ',') > 0 OR strpos({text}, '"') > 0
            OR strpos({text}, chr(10)) > 0 OR strpos({text}, chr(13)) > 0)"""


def _quote(text: str) -> str:
    return f"""'"' || replace({text}, '"', '""') || '"'"""


def _formula_guarded(text: str) -> str:
    """csv_cell's rule: a formula start gets a ``'`` unless the cell spells
    a finite number."""
    return f"""(CASE WHEN {text} ~ '{_FORMULA}'
            AND NOT ({text} ~ '{_NUMBER}' AND abs(({text})::numeric) < {_FLOAT_LIMIT})
        THEN '''' || {text} ELSE {text} END)"""


def _text_cell(column: str) -> str:
    """A text column as the csv module writes csv_cell of it; NULL and ''
    are an empty cell (the ``'`` of a formula needs no quotes)."""
    guarded = _formula_guarded(column)
    return f"""coalesce(CASE WHEN {_needs_quotes(column)} THEN {_quote(guarded)}
        ELSE {guarded} END, '')"""


def _json_cell(column: str) -> str:
    """A jsonb column as the csv module writes csv_cell of what json.loads
    returns: an object or array as JSON, quoted when it must be (a
    non-empty object has a quote, an array of two items a comma, of one
    text item a quote), a scalar as Python prints it."""
    text = f"({column} #>> '{{}}')"
    return f"""(CASE jsonb_typeof({column})
        WHEN 'object' THEN CASE WHEN {column} = '{{}}' THEN '{{}}'
            ELSE {_quote(_json(column))} END
        WHEN 'array' THEN CASE WHEN jsonb_array_length({column}) > 1
                OR jsonb_typeof({column} -> 0) IN ('string', 'object', 'array')
            THEN {_quote(_json(column))} ELSE {_json(column)} END
        WHEN 'number' THEN {_json_number(column)}
        WHEN 'string' THEN {_text_cell(text)}
        WHEN 'boolean' THEN CASE WHEN ({column})::boolean THEN 'True' ELSE 'False' END
        ELSE '' END)"""


def _int_cell(column: str) -> str:
    return f"coalesce(({column})::text, '')"


def _bool_cell(column: str) -> str:
    return f"CASE WHEN {column} THEN 'True' WHEN NOT {column} THEN 'False' ELSE '' END"


# Run columns before the measurement's, and after (exports.COLUMNS' order).
RUN_HEAD = [
    _int_cell("run.id"),
    "submission.uuid::text",
    _text_cell("submission.status"),
    _text_cell("submission.source"),
    _text_cell("benchmark.name"),
    _text_cell("run.benchmark_version"),
    _text_cell("run.fingerprint"),
    _json_cell("run.parameters"),
]
METRIC = [_text_cell("metric.name"), _text_cell("metric.unit"), _text_cell("metric.direction")]
# The run's columns after the measurement's: (column name, path from the
# measurement), as exports.COLUMNS lists them; the integers are written as such.
RUN_TAIL_COLUMNS: list[tuple[str, str]] = [
    ("cpu_vendor", "run.hardware.cpu_vendor"),
    ("cpu_model", "run.hardware.cpu_model"),
    ("cores", "run.hardware.cores"),
    ("threads", "run.hardware.threads"),
    ("ram_bytes", "run.hardware.ram_bytes"),
    ("virtualization", "run.hardware.virtualization"),
    ("storage_kind", "run.storage.kind"),
    ("device_model", "run.storage.device_model"),
    ("raid", "run.storage.raid"),
    ("filesystem", "run.storage.filesystem"),
    ("mount_options", "run.storage.mount_options"),
    ("io_scheduler", "run.storage.io_scheduler"),
    ("os_family", "run.os.family"),
    ("os_distribution", "run.os.distribution"),
    ("os_version", "run.os.version"),
    ("kernel", "run.os.kernel"),
    ("engine", "run.server.engine"),
    ("version", "run.server.version"),
    ("version_major", "run.server.version_major"),
    ("architecture", "run.server.architecture"),
    ("config_profile", "run.server.config_profile"),
    ("protocol", "run.client.protocol"),
    ("driver", "run.client.driver"),
    ("driver_version", "run.client.driver_version"),
    ("cpu_placement", "run.client.cpu_placement"),
    ("load_engine", "run.client.load_engine"),
]
_INTEGER_COLUMNS = frozenset({"cores", "threads", "ram_bytes"})
RUN_TAIL = [
    (_int_cell if name in _INTEGER_COLUMNS else _text_cell)(path.removeprefix("run."))
    for name, path in RUN_TAIL_COLUMNS
]


def _samples_cell(column: str, text: str) -> str:
    """The samples (``column``, and ``text``, its jsonb text computed once):
    an array of numbers is written by jsonb as json.dumps writes it, but
    for a number below 1e-4 (a float Python wrote as ``1e-05``, which jsonb
    keeps as ``0.00001``): every number stored came from Python's json.dumps
    (the upload's canonical JSON, Django's JSONField), so its digits are
    repr's. Anything else takes the general way."""
    return f"""(CASE WHEN left({text}, 1) = '[' AND strpos({text}, '"') = 0
            AND strpos({text}, '0.0000') = 0
        THEN CASE WHEN strpos({text}, ',') > 0 THEN '"' || {text} || '"' ELSE {text} END
        ELSE {_json_cell(column)} END)"""


def _plain_json(value: str) -> str:
    """json.dumps(json.loads(jsonb), ensure_ascii=False): jsonb's text (its
    key order, its string escapes, which are Python's), numbers as Python
    writes them."""
    scalar = f"""(CASE jsonb_typeof(v) WHEN 'number' THEN {_json_number("v")}
        ELSE v::text END)"""
    return f"""(CASE jsonb_typeof({value})
        WHEN 'object' THEN (
            SELECT '{{' || coalesce(string_agg(to_json(k)::text || ': ' || {scalar},
                ', ' ORDER BY n), '') || '}}'
            FROM jsonb_each({value}) WITH ORDINALITY AS pairs(k, v, n))
        WHEN 'array' THEN (
            SELECT '[' || coalesce(string_agg({scalar}, ', ' ORDER BY n), '') || ']'
            FROM jsonb_array_elements({value}) WITH ORDINALITY AS items(v, n))
        WHEN 'number' THEN {_json_number(value)}
        ELSE ({value})::text END)"""  # noqa: S608 -- our own SQL of column names


def _json_value(column: str, text: str | None = None) -> str:
    """A jsonb column in a JSON line: its text, unless a number in it may be
    written otherwise by Python (see ``_samples_cell``)."""
    text = text or f"({column})::text"
    return f"""(CASE WHEN strpos({text}, '0.0000') = 0 THEN {text}
        ELSE {_plain_json(column)} END)"""


def _keyed(name: str, value: str) -> str:
    return f"""'"{name}": ' || {value}"""


def _json_text(column: str) -> str:
    return f"coalesce(to_json({column})::text, 'null')"


def _json_int(column: str) -> str:
    return f"coalesce(({column})::text, 'null')"


class LineFormat(NamedTuple):
    """How one export writes a line: its cells in COLUMNS' order (the
    run's and the metric's computed once each, see ``lines_statement``)."""

    start: str
    run_head: list[str]
    metric: list[str]
    parameters: Callable[[str], str]
    value: str
    samples: str
    approximate: str
    run_tail: list[str]
    end: str
    separator: str


CSV = LineFormat(
    start="picked.id::text",
    run_head=RUN_HEAD,
    metric=METRIC,
    parameters=_json_cell,
    value=_float("picked.value", "picked.value_text"),
    samples=_samples_cell("picked.samples", "picked.samples_text"),
    approximate=_bool_cell("picked.approximate"),
    run_tail=RUN_TAIL,
    end="''",
    separator="','",
)
_TEXT_COLUMNS = {
    "status": "submission.status",
    "source": "submission.source",
    "benchmark": "benchmark.name",
    "benchmark_version": "run.benchmark_version",
    "fingerprint": "run.fingerprint",
}
JSON_LINES = LineFormat(
    start="""'{"measurement_id": ' || picked.id::text""",
    run_head=[
        _keyed("run_id", "run.id::text"),
        _keyed("submission", "'\"' || submission.uuid::text || '\"'"),
        *(_keyed(name, _json_text(column)) for name, column in _TEXT_COLUMNS.items()),
        _keyed("run_parameters", _json_value("run.parameters")),
    ],
    metric=[
        _keyed(name, _json_text(f"metric.{field}"))
        for name, field in (("metric", "name"), ("unit", "unit"), ("direction", "direction"))
    ],
    parameters=lambda column: _keyed("parameters", _json_value(column)),
    value=_keyed("value", _float("picked.value", "picked.value_text", json=True)),
    samples=_keyed("samples", _json_value("picked.samples", "picked.samples_text")),
    approximate=_keyed("approximate", "CASE WHEN picked.approximate THEN 'true' ELSE 'false' END"),
    run_tail=[
        _keyed(
            name,
            (_json_int if name in _INTEGER_COLUMNS else _json_text)(path.removeprefix("run.")),
        )
        for name, path in RUN_TAIL_COLUMNS
    ],
    end="'}'",
    separator="', '",
)


# What the statement reads of the measurements query (Django's SQL, its
# filters and order): value_text and samples_text are computed there, once a row.
PICKED = (
    "id",
    "run_id",
    "metric_id",
    "parameters",
    "value",
    "samples",
    "approximate",
    "value_text",
    "samples_text",
)


def lines_statement(inner: str, tables: dict[str, str], line: LineFormat = CSV) -> str:
    """A SELECT of one text column, the lines (without their line break,
    as ``line`` says: CSV or JSON lines) of ``inner``'s measurements in its order. ``inner`` selects
    the measurements' id, run_id, metric_id, parameters, value, samples,
    approximate, and value_text and samples_text (their text, computed once
    per row in that subquery, which its ORDER BY keeps a subquery);
    ``tables`` names the tables (results_run …).

    A run's cells, a metric's and a parameters object's are computed in
    LATERAL subqueries that PostgreSQL memoizes (binary mode: by the value's
    bytes, so 1 and 1.0 are two keys): once per run, not per measurement.
    """
    t, sep = tables, f" || {line.separator} || "
    return f"""
        SELECT {line.start} || {line.separator} || runs.head || {line.separator}
            || metrics.cells || {line.separator} || parameters.cell || {line.separator}
            || {line.value} || {line.separator} || {line.samples} || {line.separator}
            || {line.approximate} || {line.separator} || runs.tail || {line.end}
        FROM ({inner} OFFSET 0) AS picked
        CROSS JOIN LATERAL (
            SELECT {sep.join(line.run_head)} AS head, {sep.join(line.run_tail)} AS tail
            FROM {t["run"]} AS run
            JOIN {t["submission"]} AS submission ON submission.id = run.submission_id
            JOIN {t["benchmark"]} AS benchmark ON benchmark.id = run.benchmark_id
            JOIN {t["hardware"]} AS hardware ON hardware.id = run.hardware_id
            JOIN {t["storage"]} AS storage ON storage.id = run.storage_id
            JOIN {t["os"]} AS os ON os.id = run.os_id
            JOIN {t["server"]} AS server ON server.id = run.server_id
            JOIN {t["client"]} AS client ON client.id = run.client_id
            WHERE run.id = picked.run_id
            OFFSET 0
        ) AS runs
        CROSS JOIN LATERAL (
            SELECT {sep.join(line.metric)} AS cells FROM {t["metric"]} AS metric
            WHERE metric.id = picked.metric_id
            OFFSET 0
        ) AS metrics
        CROSS JOIN LATERAL (
            -- the value in one column of its own: the memo's key, once
            SELECT {line.parameters("given.parameters")} AS cell
            FROM (SELECT picked.parameters OFFSET 0) AS given
            OFFSET 0
        ) AS parameters
        ORDER BY picked.id DESC
    """  # noqa: S608 -- our own SQL around Django's
