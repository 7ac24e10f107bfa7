from django.urls import path

from benchhub.imports import views

app_name = "imports"

urlpatterns = [
    path("new/", views.tool_upload, name="new"),
    path("<uuid:uuid>/", views.tool_upload_detail, name="detail"),
]
