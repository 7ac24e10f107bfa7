from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from benchhub.comparisons.urls import runs_urlpatterns
from benchhub.lib.api import not_found
from benchhub.lib.csp import csp_report
from benchhub.lib.health import healthz, healthz_live
from benchhub.openapi import DocsPage, SchemaApi

urlpatterns = [
    path("runs/compare/", include((runs_urlpatterns, "runs-compare"))),
    path("", include("benchhub.results.urls")),
    path("", include("benchhub.leaderboards.urls")),
    path("", include("benchhub.releases.urls")),
    path("studies/", include("benchhub.studies.urls")),
    path("imports/", include("benchhub.imports.urls")),
    path("compare/", include("benchhub.comparisons.urls")),
    path("accounts/", include("benchhub.accounts.urls")),
    path("moderation/", include("benchhub.moderation.urls")),
    path("api/v1/", include("benchhub.results.api_urls")),
    path("api/v1/baselines/", include("benchhub.baselines.api_urls")),
    path("api/v1/", include("benchhub.imports.api_urls")),
    path("api/v1/comparisons/", include("benchhub.comparisons.api_urls")),
    path("api/v1/leaderboards/", include("benchhub.leaderboards.api_urls")),
    path("api/v1/history/", include("benchhub.releases.api_urls")),
    path("api/v1/studies/", include("benchhub.studies.api_urls")),
    path("api/v1/", include("benchhub.moderation.api_urls")),
    path("api/schema/", SchemaApi.as_view(), name="openapi-schema"),
    path("api/docs/", DocsPage.as_view(url_name="openapi-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("healthz/ready", healthz, name="healthz-ready"),
    path("healthz/live", healthz_live, name="healthz-live"),
    path("csp-report", csp_report, name="csp-report"),
    # Last: any other /api/ path is a JSON 404, with DEBUG on too (where
    # Django would answer its HTML page instead of handler404).
    re_path(r"^api/", csrf_exempt(not_found)),
]

# Under /api/ every error answers the API's one error shape (benchhub.lib.api).
handler400 = "benchhub.lib.api.bad_request"
handler403 = "benchhub.lib.api.permission_denied"
handler404 = "benchhub.lib.api.not_found"
handler500 = "benchhub.lib.api.server_error"
