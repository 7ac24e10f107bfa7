"""Both compiled loops are built wherever they can be: setup.py builds them as optional,
so a failed build is only a warning in pip's output, and here it fails a test."""

from __future__ import annotations

import pytest
from _compiled import NOT_BUILT, can_build
from benchhub_agent.benchmarks import _pg_compiled, _select_update_clients


@pytest.mark.parametrize(
    "compiled_loop",
    [_pg_compiled.compiled_loop, _select_update_clients.compiled_loop],
    ids=["PostgreSQL round trips", "Firebird round trips"],
)
def test_the_compiled_loop_is_built_where_it_can_be(compiled_loop):
    if not can_build():
        pytest.skip(NOT_BUILT)
    assert compiled_loop() is not None
