from django.urls import path

from benchhub.results import feeds, views

app_name = "results"

urlpatterns = [
    path("", views.home, name="home"),
    path("results/", views.results_browser, name="browser"),
    path("results/feed.atom", feeds.results_feed, name="feed"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("submissions/<uuid:uuid>/", views.submission_detail, name="submission"),
    path("benchmarks/<slug:name>/", views.benchmark_page, name="benchmark"),
    path("cpus/<path:model>/", views.cpu_page, name="cpu"),
    path("filesystems/<str:name>/", views.filesystem_page, name="filesystem"),
    path("servers/<str:engine>/<str:version>/", views.version_page, name="version"),
]
