"""The Content-Security-Policy header on every answer, and the endpoint
browsers report violations to."""

from __future__ import annotations

import json
import logging

import pytest

from benchhub.lib.csp import POLICY, POLICY_WITH_STYLE_ELEMENTS

pytestmark = pytest.mark.django_db


def directives(policy: str) -> dict[str, list[str]]:
    parts = (part.split() for part in policy.split(";") if part.strip())
    return {name: values for name, *values in parts}


@pytest.mark.parametrize(
    "path",
    ["/", "/results/?engine=postgresql", "/accounts/login/", "/api/v1/runs/", "/no-such-page-41/"],
)
def test_every_answer_carries_the_strict_policy(client, path):
    response = client.get(path)
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["report-uri"] == ["/csp-report"]
    assert response["Reporting-Endpoints"] == 'csp="/csp-report"'


def test_the_api_documentation_allows_redocs_styles_but_no_inline_script(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == POLICY_WITH_STYLE_ELEMENTS
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'", "'unsafe-inline'"]
    page = response.content.decode()
    # every <script> either has a source or is a JSON data block
    for tag in page.split("<script")[1:]:
        opening = tag.split(">", 1)[0]
        assert "src=" in opening or 'type="application/json"' in opening, opening


def test_pages_hold_no_inline_script_or_handler(client):
    for path in ("/", "/results/", "/accounts/login/", "/accounts/signup/"):
        page = client.get(path).content.decode()
        assert not [t for t in page.split("<script")[1:] if "src=" not in t.split(">", 1)[0]]
        assert not [a for a in (" onclick=", " onload=", " onchange=", " hx-on") if a in page]
    assert POLICY != POLICY_WITH_STYLE_ELEMENTS


def test_a_violation_report_is_logged_and_answered_204(client, caplog):
    report = {"csp-report": {"violated-directive": "script-src-elem", "line-number": 29}}
    with caplog.at_level(logging.WARNING, logger="benchhub.csp"):
        response = client.post(
            "/csp-report", json.dumps(report), content_type="application/csp-report"
        )
    assert response.status_code == 204
    assert "script-src-elem" in caplog.text and "29" in caplog.text


def test_a_report_that_is_not_json_is_still_204(client, caplog):
    with caplog.at_level(logging.WARNING, logger="benchhub.csp"):
        response = client.post("/csp-report", b"\xff{not json", content_type="text/plain")
    assert response.status_code == 204
    assert "not json" in caplog.text
    assert client.get("/csp-report").status_code == 405
