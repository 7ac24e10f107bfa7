"""The BenchHub agent: runs benchmarks against real databases and uploads them."""

__version__ = "0.1.0"
