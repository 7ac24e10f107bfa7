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
