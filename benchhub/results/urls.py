from django.urls import path

from benchhub.results import views

app_name = "results"

urlpatterns = [
    path("", views.home, name="home"),
    path("results/", views.results_browser, name="browser"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("submissions/<uuid:uuid>/", views.submission_detail, name="submission"),
]
