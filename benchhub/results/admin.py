from django.contrib import admin, messages

from benchhub.lib.admin import ReadOnlyAdmin
from benchhub.results import models


def _moderation_action(action: str, description: str):
    """An admin action that goes through moderation's one service, so that
    the admin changes a status exactly as the queue does (audit log,
    baselines). A reason-requiring action is not offered here."""

    def run(modeladmin, request, queryset) -> None:
        from benchhub.moderation.services import submissions_moderate

        outcomes = submissions_moderate(
            submissions=queryset, actor=request.user, action=action, reason="from the admin"
        )
        done = sum(1 for o in outcomes if o.error is None)
        modeladmin.message_user(request, f"{description}: {done} of {len(outcomes)}")
        for o in outcomes:
            if o.error is not None:
                modeladmin.message_user(request, f"{o.submission.uuid}: {o.error}", messages.ERROR)

    run.short_description = description
    run.__name__ = f"moderate_{action}"
    return run


@admin.register(models.Submission)
class SubmissionAdmin(admin.ModelAdmin):
    """Read-only: statuses change in the moderation queue (or with the
    actions below), which log why; what was uploaded never changes."""

    list_display = ("uuid", "submitter", "source", "status", "tool", "created_at")
    list_filter = ("status", "source")
    list_select_related = ("submitter",)
    search_fields = ("uuid", "submitter__username", "tool")
    actions = [
        _moderation_action("approve", "Approve"),
        _moderation_action("hide", "Hide"),
        _moderation_action("unhide", "Unhide"),
        _moderation_action("delete", "Delete (soft, through moderation)"),
    ]

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class StoredByUploadsAdmin(admin.ModelAdmin):
    """Rows an upload stored from its document (runs, their dimension rows):
    seen and deleted here, never added or edited. An edited run's benchmark
    was no longer its measurements' and its fingerprint no longer the key
    its values are counted in (no baseline marked); an edited dimension row
    no longer held the values its digest names, which the next upload of
    them reuses. Normalized values change through alias rules
    (/moderation/dimensions/), from the raw strings kept beside them."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Run)
class RunAdmin(StoredByUploadsAdmin):
    """Deleting a run outright marks its key for a rebuild (baselines.services)."""

    list_display = ("id", "benchmark", "submission", "server", "storage", "client")
    list_select_related = ("benchmark", "submission", "server", "storage", "client")
    list_filter = ("benchmark",)
    raw_id_fields = ("submission", "hardware", "storage", "os", "server", "client")


@admin.register(models.Benchmark, models.Metric)
class CatalogAdmin(ReadOnlyAdmin):
    """The benchmark catalog (agents/benchhub_contract/schema/benchmarks.json),
    mirrored here by every migrate, which undid an edit made here; a
    benchmark or metric deleted here left every upload of it failing (500)
    until the next migrate. Change the file instead."""


admin.site.register(
    [
        models.Hardware,
        models.Storage,
        models.OperatingSystem,
        models.DatabaseServer,
        models.Client,
    ],
    StoredByUploadsAdmin,
)
