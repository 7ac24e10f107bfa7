"""The agent's one compiled module, optional: everything else is in pyproject.toml.

select-update's Firebird loop in C (benchhub_agent/benchmarks/_firebird_loop.c) is
built where a C compiler and Python's headers are found; where not, pip says the build
failed and installs the agent without it, and the same transactions run in Python.
"""

import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "benchhub_agent.benchmarks._firebird_loop",
            sources=["benchhub_agent/benchmarks/_firebird_loop.c"],
            optional=True,
        )
    ]
    # Its clock is POSIX's; Windows runs the Python loop.
    if os.name == "posix"
    else [],
)
