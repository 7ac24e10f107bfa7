from django.urls import path

from benchhub.leaderboards import apis

app_name = "leaderboards-api"

urlpatterns = [
    path("<slug:name>/", apis.LeaderboardApi.as_view(), name="leaderboard"),
]
