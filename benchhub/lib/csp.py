"""Content-Security-Policy on every answer (Django 5.2 has none built in).

Scripts come only from this site's own static files (its JS and the vendored
htmx and Chart.js): no inline <script>, no on...= attribute, no eval. A
stored text that slips through as markup therefore runs nothing. Style
attributes stay allowed (style-src-attr): the distribution marks are drawn
with a computed left/width, and a style attribute cannot run script.

Violations are posted by browsers to /csp-report (report-uri, and report-to
through the Reporting-Endpoints header) and logged at WARNING.

A view may set ``response.csp_style_elements = True`` to allow <style>
elements it cannot avoid (Redoc, the API documentation, writes its own);
scripts stay the site's own there too."""

from __future__ import annotations

import json
import logging

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from benchhub.lib.methods import page_methods

logger = logging.getLogger("benchhub.csp")

REPORT_PATH = "/csp-report"

_COMMON = (
    "default-src 'self'",
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "img-src 'self' data:",
    "connect-src 'self'",
    f"report-uri {REPORT_PATH}",
    "report-to csp",
)
POLICY = "; ".join((*_COMMON, "style-src 'self'", "style-src-attr 'unsafe-inline'"))
# Redoc builds its styles as <style> elements and its search index in a blob: worker.
POLICY_WITH_STYLE_ELEMENTS = "; ".join(
    (*_COMMON, "style-src 'self' 'unsafe-inline'", "worker-src 'self' blob:")
)

# A report body is a few hundred bytes; a larger one is not logged whole.
_REPORT_LIMIT = 8192


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            relaxed = getattr(response, "csp_style_elements", False)
            response["Content-Security-Policy"] = POLICY_WITH_STYLE_ELEMENTS if relaxed else POLICY
            response["Reporting-Endpoints"] = f'csp="{REPORT_PATH}"'
        return response


@page_methods("POST")
@csrf_exempt  # under page_methods, whose handlers check the token unless exempt
def csp_report(request):
    """Where browsers send a violation: logged, answered 204. Never an error
    for the sender: the body is the browser's, not a user's input to check."""
    body = request.body[:_REPORT_LIMIT]
    try:
        report = json.loads(body)
    except ValueError:
        report = body.decode("utf-8", "replace")
    logger.warning("Content-Security-Policy violation: %s", report)
    return HttpResponse(status=204)
