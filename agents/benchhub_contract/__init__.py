"""What the BenchHub server and its agent must agree on, in one place (README.md)."""
