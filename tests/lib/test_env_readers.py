"""The settings' environment readers (benchhub/lib/env.py) where
django-environ, the library that would replace them, reads a value
differently: each test names the value and what the library makes of it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from benchhub.lib.env import envbool, envfloat, envint, envlist, envstr


def test_a_misspelt_boolean_stops_the_start(monkeypatch):
    """django-environ's bool reads a word it does not know as False: the
    typo would run the site as if it were not behind its HTTPS proxy."""
    monkeypatch.setenv("BENCHHUB_HTTPS_PROXY", "ture")

    with pytest.raises(ImproperlyConfigured, match="BENCHHUB_HTTPS_PROXY='ture': expected true"):
        envbool("BENCHHUB_HTTPS_PROXY", False)


def test_a_value_starting_with_a_dollar_is_taken_as_it_is(monkeypatch):
    """django-environ reads "$3cr3t" as the name of another variable, "3cr3t",
    and, that one unset, returns the default: the password became ""."""
    monkeypatch.setenv("EMAIL_HOST_PASSWORD", "$3cr3t-4x")
    monkeypatch.delenv("3cr3t-4x", raising=False)

    assert envstr("EMAIL_HOST_PASSWORD", "") == "$3cr3t-4x"


def test_a_number_in_exponent_notation_is_read_as_written(monkeypatch):
    """django-environ drops every character of a float that is not a digit,
    a comma, a dot or a minus: "2.5e1" was 2.51."""
    monkeypatch.setenv("BENCHHUB_AUTOFLAG_SCORE", "2.5e1")

    assert envfloat("BENCHHUB_AUTOFLAG_SCORE", 3.5, above=0) == 25.0


def test_the_items_of_a_list_lose_their_spaces(monkeypatch):
    """django-environ keeps them: " bench.example" matches no Host header."""
    monkeypatch.setenv("ALLOWED_HOSTS", "hub.example, bench.example ,")

    assert envlist("ALLOWED_HOSTS", []) == ["hub.example", "bench.example"]


def test_a_number_set_empty_is_the_default(monkeypatch):
    """Compose passes ${VAR} of an unset variable as "": django-environ
    answers int("")'s ValueError, naming no variable."""
    monkeypatch.setenv("GUNICORN_WORKERS", "")

    assert envint("GUNICORN_WORKERS", 3, minimum=1) == 3


def test_a_number_that_is_not_one_is_named_with_its_variable(monkeypatch):
    monkeypatch.setenv("GUNICORN_WORKERS", "4 workers")

    with pytest.raises(ImproperlyConfigured, match="WORKERS='4 workers': expected a whole"):
        envint("GUNICORN_WORKERS", 3, minimum=1)
