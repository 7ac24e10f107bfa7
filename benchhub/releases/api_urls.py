from django.urls import path

from benchhub.releases import apis

app_name = "releases-api"

urlpatterns = [
    path("<slug:name>/", apis.HistoryApi.as_view(), name="history"),
]
