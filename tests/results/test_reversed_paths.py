"""The answers' links are written around a path reversed once per process
(benchhub/results/outputs.reversed_path): each is reverse()'s own."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse, set_script_prefix

from benchhub.results.outputs import reversed_path

NAMES_AND_KEYS = [
    ("api:run-detail", [0, 7, 10**12, 9_876_543_210_123_457]),
    ("results:run", [1, 42]),
    ("api:submission-detail", [uuid.UUID(int=0), uuid.uuid4(), uuid.uuid4()]),
    ("results:submission", [uuid.uuid4()]),
]


@pytest.mark.parametrize("prefix", ["/", "/benchhub/"])
@pytest.mark.parametrize(("name", "keys"), NAMES_AND_KEYS, ids=[n for n, _ in NAMES_AND_KEYS])
def test_a_path_is_reverses_own_for_every_key_and_script_prefix(name, keys, prefix):
    set_script_prefix(prefix)
    try:
        for key in keys:
            assert reversed_path(name, key) == reverse(name, args=[key])
        assert reverse(name, args=[keys[0]]).startswith(prefix)
    finally:
        set_script_prefix("/")


def test_a_key_of_another_type_is_left_to_reverse():
    key = str(uuid.uuid4())
    assert reversed_path("api:submission-detail", key) == reverse(
        "api:submission-detail", args=[key]
    )
