"""The table `run` prints after measuring."""

from __future__ import annotations

from benchhub_agent.benchmarks.base import Measurement
from benchhub_agent.output import results_table


def test_a_whole_value_keeps_its_columns_decimals():
    """Throughput 7313.0 beside 3847.7 printed as "7313", as if measured
    less precisely; a column of whole numbers (errors) stays whole."""
    table = results_table(
        [
            Measurement("throughput", 3847.7, "tx/s", {"clients": 1}),
            Measurement("errors", 0.0, "count", {"clients": 1}),
            Measurement("throughput", 7313.0, "tx/s", {"clients": 4}),
            Measurement("errors", 0.0, "count", {"clients": 4}),
        ]
    )

    rows = [line.split() for line in table.splitlines()[2:]]
    assert rows == [["clients=1", "3847.7", "0"], ["clients=4", "7313.0", "0"]]


def test_a_zero_is_printed_without_a_sign():
    """-0.0 printed "-0.000" in a column of decimals, and so did a negative
    value too small for three decimals: below the 0.000 beside it, seemingly."""
    table = results_table(
        [
            Measurement("seconds", 1.5, "s", {"clients": 1}),
            Measurement("seconds", -0.0, "s", {"clients": 2}),
            Measurement("seconds", -0.0001, "s", {"clients": 3}),
        ]
    )

    rows = [line.split() for line in table.splitlines()[2:]]
    assert rows == [["clients=1", "1.500"], ["clients=2", "0.000"], ["clients=3", "0.000"]]
