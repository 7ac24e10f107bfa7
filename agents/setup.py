"""The agent's two compiled modules, optional: everything else is in pyproject.toml.

select-update's Firebird loop (benchhub_agent/benchmarks/_firebird_loop.c) and its
PostgreSQL loop (_pg_loop.c) in C are built where a C compiler and Python's headers are
found; where not, pip says the build failed and installs the agent without them, and the
same transactions run in Python.
"""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "benchhub_agent.benchmarks._firebird_loop",
            sources=["benchhub_agent/benchmarks/_firebird_loop.c"],
            optional=True,
        ),
        Extension(
            "benchhub_agent.benchmarks._pg_loop",
            sources=["benchhub_agent/benchmarks/_pg_loop.c"],
            optional=True,
        ),
    ]
    # Their clock and poll() are POSIX's; Windows runs the Python loops.
    if os.name == "posix"
    else [],
)
