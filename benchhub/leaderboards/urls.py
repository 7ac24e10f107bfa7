from django.urls import path

from benchhub.leaderboards import views

app_name = "leaderboards"

urlpatterns = [
    path("benchmarks/<slug:name>/leaderboard/", views.leaderboard_page, name="leaderboard"),
]
