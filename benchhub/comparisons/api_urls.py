from django.urls import path

from benchhub.comparisons import apis

app_name = "comparisons-api"

urlpatterns = [
    path("", apis.ComparisonApi.as_view(), name="comparison"),
]
