from django.urls import path

from benchhub.results import views

app_name = "results"

urlpatterns = [
    path("", views.home, name="home"),
]
