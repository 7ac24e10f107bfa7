from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Listed and shown only: the rows are written elsewhere (a service, a
    file mirrored by migrate), which the subclass's docstring names."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
