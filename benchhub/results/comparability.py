"""The comparability key: which results may be pooled and ranked together.

Version 1 of the key is the hash of:

- the benchmark, its version and its run parameters (transactions, rows,
  locking, duration, scale, …: what the run was asked to do);
- the database engine and its major version;
- the load engine (the agent's own engine and pgbench do not measure the
  same thing the same way).

Hardware, storage, OS, protocol and server settings are *not* in the key:
they are what people compare across. Unstable readings (current MHz, free
memory) are never sent, so they cannot enter it. Measurement parameters
(clients=20, operation=insert) are the point within a key, not part of it:
a baseline is per key, metric and point.

Changing what goes in means a new FINGERPRINT_VERSION; rows keep the version
they were computed with, and a task recomputes old ones.
"""

import hashlib
import json
from typing import Any

FINGERPRINT_VERSION = 1


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run_fingerprint(
    *,
    benchmark: str,
    benchmark_version: str,
    parameters: dict[str, Any],
    engine: str,
    engine_major: str,
    load_engine: str,
) -> str:
    key = {
        "v": FINGERPRINT_VERSION,
        "benchmark": benchmark,
        "benchmark_version": benchmark_version,
        "parameters": parameters,
        "engine": engine,
        "engine_major": engine_major,
        "load_engine": load_engine.lower(),
    }
    return sha256_hex(canonical_json(key))
