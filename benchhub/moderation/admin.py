from django.contrib import admin

from benchhub.moderation.models import AliasRule, AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The log is written by moderation.services only: read-only here."""

    list_display = ("created_at", "actor", "action", "submission", "before", "after", "reason")
    list_filter = ("action",)
    list_select_related = ("actor", "submission")
    search_fields = ("submission__uuid", "actor__username", "reason")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AliasRule)
class AliasRuleAdmin(admin.ModelAdmin):
    """Rules are added and removed on /moderation/dimensions/, where the
    stored rows follow; here they are only listed."""

    list_display = ("dimension", "field", "from_value", "to_value", "created_by", "created_at")
    list_filter = ("dimension", "field")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
