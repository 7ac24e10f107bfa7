from django.urls import path

from benchhub.imports import apis

app_name = "imports_api"

urlpatterns = [
    path("imports/", apis.ToolImportApi.as_view(), name="tool-import"),
]
