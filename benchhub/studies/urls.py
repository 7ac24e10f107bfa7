from django.urls import path

from benchhub.studies import views

app_name = "studies"

urlpatterns = [
    path("", views.studies_page, name="studies"),
    path("<uuid:uuid>/", views.study_page, name="study"),
]
