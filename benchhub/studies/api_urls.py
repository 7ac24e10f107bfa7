from django.urls import path

from benchhub.studies import apis

app_name = "studies-api"

urlpatterns = [
    path("", apis.StudyListApi.as_view(), name="studies"),
    path("<uuid:uuid>/", apis.StudyApi.as_view(), name="study"),
]
