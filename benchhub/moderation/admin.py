from django.contrib import admin

from benchhub.lib.admin import ReadOnlyAdmin
from benchhub.moderation.models import AliasRule, AuditEntry, Report


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """The log is written by moderation.services only."""

    list_display = ("created_at", "actor", "action", "submission", "before", "after", "reason")
    list_filter = ("action",)
    list_select_related = ("actor", "submission")
    search_fields = ("submission__uuid", "actor__username", "reason")


@admin.register(AliasRule)
class AliasRuleAdmin(ReadOnlyAdmin):
    """Rules are added and removed on /moderation/dimensions/, where the
    stored rows follow; here they are only listed."""

    list_display = ("dimension", "field", "from_value", "to_value", "created_by", "created_at")
    list_filter = ("dimension", "field")


@admin.register(Report)
class ReportAdmin(ReadOnlyAdmin):
    """Readers' reports: written by moderation.services.submission_report,
    handled in the queue."""

    list_display = ("created_at", "reporter", "submission", "reason", "handled_at", "handled_by")
    list_select_related = ("reporter", "submission", "handled_by")
    search_fields = ("submission__uuid", "reporter__username", "reason")
