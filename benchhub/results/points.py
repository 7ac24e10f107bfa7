"""A parameter value as the point a comparison groups it into, worked out
once when a result is stored (``Measurement.parameter_keys``,
``Run.parameter_keys``) instead of by every comparison for every row.

The key is text PostgreSQL can group by: ``n:<number>`` for a number —
the JSON number 20, 20.0 and the text "20" are one point, as
``parameter_canonical`` (the filters' rule) says, and the text "20.0", " 20"
or "007" stay text — ``s:<text>`` for text (a boolean is the text
true/false, an object or a list its sorted JSON text, as the Python path
prints them), and no key at all for null. ``point_from_key`` gives back the
value the Python path (``aggregation._axis_value``) groups by, so both paths
make the same cells (tests/comparisons/test_database_aggregation.py).

Numbers are keyed by their exact decimal value, written the way PostgreSQL
hands a stored value back: jsonb keeps a number as its decimal text, so
1.5e300 comes back as an integer and 0.1 as the float 0.1.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from benchhub.results.filters import parameter_canonical

NUMBER, TEXT = "n:", "s:"


def _number_key(number: int | float) -> str:
    if isinstance(number, int):
        return NUMBER + str(number)
    exact = Decimal(repr(number))
    if exact == exact.to_integral_value():
        return NUMBER + str(int(exact))
    return NUMBER + repr(number)


def point_key(raw: Any) -> str | None:
    """The grouping key of one stored parameter value; None for null."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return TEXT + ("true" if raw else "false")
    if isinstance(raw, (dict, list)):
        return TEXT + json.dumps(raw, sort_keys=True, ensure_ascii=False)
    if isinstance(raw, float):
        return _number_key(raw) if math.isfinite(raw) else TEXT + str(raw)
    value = parameter_canonical(raw)
    if isinstance(value, (int, float)):
        return _number_key(value)
    return TEXT + str(value)


def parameter_keys(parameters: Any) -> dict[str, str]:
    """Each parameter's key; a null parameter has none (it is missing)."""
    if not isinstance(parameters, dict):
        return {}
    keys = {}
    for name, value in parameters.items():
        if type(value) is int:  # most are (clients=20): point_key's answer, without its steps
            keys[name] = NUMBER + str(value)
        elif (key := point_key(value)) is not None:
            keys[name] = key
    return keys


def point_from_key(key: str | None) -> Any:
    """The value a key stands for: a number (int or float) or text."""
    if key is None:
        return None
    if key.startswith(NUMBER):
        return json.loads(key.removeprefix(NUMBER))
    return key.removeprefix(TEXT)
