from django.urls import path

from benchhub.results import apis

app_name = "api"

urlpatterns = [
    path("submissions/", apis.SubmissionCollectionApi.as_view(), name="submission-list"),
    path("submissions/<uuid:uuid>/", apis.SubmissionDetailApi.as_view(), name="submission-detail"),
    path("runs/", apis.RunListApi.as_view(), name="run-list"),
    path("runs/<int:pk>/", apis.RunDetailApi.as_view(), name="run-detail"),
    path("measurements/", apis.MeasurementListApi.as_view(), name="measurement-list"),
    path("measurements/export.csv", apis.MeasurementCsvApi.as_view(), name="measurement-csv"),
    path(
        "measurements/export.jsonl",
        apis.MeasurementJsonLinesApi.as_view(),
        name="measurement-jsonl",
    ),
    path("hardware/", apis.HardwareListApi.as_view(), name="hardware-list"),
    path("storage/", apis.StorageListApi.as_view(), name="storage-list"),
    path("os/", apis.OperatingSystemListApi.as_view(), name="os-list"),
    path("servers/", apis.DatabaseServerListApi.as_view(), name="server-list"),
    path("clients/", apis.ClientListApi.as_view(), name="client-list"),
    path("benchmarks/", apis.BenchmarkListApi.as_view(), name="benchmark-list"),
    path("schema/submission.json", apis.SubmissionSchemaApi.as_view(), name="submission-schema"),
]
