from django.urls import path

from benchhub.releases import views

app_name = "releases"

urlpatterns = [
    path("changes/", views.changes_page, name="changes"),
    path("benchmarks/<slug:name>/history/", views.history_page, name="history"),
]
