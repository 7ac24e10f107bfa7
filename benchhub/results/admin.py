from django.contrib import admin

from benchhub.results import models


@admin.register(models.Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("uuid", "submitter", "source", "status", "tool", "created_at")
    list_filter = ("status", "source")
    search_fields = ("uuid", "submitter__username", "tool")
    readonly_fields = ("uuid", "content_digest", "document", "created_at")


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "benchmark", "submission", "server", "storage", "client")
    list_select_related = ("benchmark", "submission", "server", "storage", "client")
    list_filter = ("benchmark",)
    raw_id_fields = ("submission", "hardware", "storage", "os", "server", "client")


for dimension in (
    models.Hardware,
    models.Storage,
    models.OperatingSystem,
    models.DatabaseServer,
    models.Client,
    models.Benchmark,
    models.Metric,
):
    admin.site.register(dimension)
