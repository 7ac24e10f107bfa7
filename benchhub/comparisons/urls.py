from django.urls import path

from benchhub.comparisons import views

app_name = "comparisons"

urlpatterns = [
    path("", views.compare, name="compare"),
]
