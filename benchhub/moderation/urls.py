from django.urls import path

from benchhub.moderation import views

app_name = "moderation"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("act/", views.queue_act, name="act"),
    path("report/<uuid:uuid>/", views.submission_report, name="report"),
    path("audit/", views.audit_log, name="audit"),
    path("dimensions/", views.dimensions, name="dimensions"),
    path("aliases/<int:pk>/remove/", views.alias_rule_remove, name="alias-remove"),
]
