from django.urls import path

from benchhub.moderation import apis

app_name = "moderation_api"

urlpatterns = [
    path(
        "submissions/<uuid:uuid>/moderation/",
        apis.SubmissionModerationApi.as_view(),
        name="submission-moderate",
    ),
    path(
        "submissions/<uuid:uuid>/reports/",
        apis.SubmissionReportApi.as_view(),
        name="submission-report",
    ),
]
