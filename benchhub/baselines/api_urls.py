from django.urls import path

from benchhub.baselines import apis

app_name = "baselines_api"

urlpatterns = [
    path("", apis.BaselineListApi.as_view(), name="list"),
    path("rank/", apis.BaselineRankApi.as_view(), name="rank"),
]
