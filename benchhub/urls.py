from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

urlpatterns = [
    path("", include("benchhub.results.urls")),
    path("imports/", include("benchhub.imports.urls")),
    path("compare/", include("benchhub.comparisons.urls")),
    path("api/v1/", include("benchhub.results.api_urls")),
    path("api/v1/baselines/", include("benchhub.baselines.api_urls")),
    path("api/v1/", include("benchhub.imports.api_urls")),
    path("api/v1/comparisons/", include("benchhub.comparisons.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="openapi-schema"),
    path("api/docs/", SpectacularRedocView.as_view(url_name="openapi-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]

handler404 = "benchhub.lib.api.not_found"
