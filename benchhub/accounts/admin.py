from django.contrib import admin, messages

from benchhub.accounts.models import ApiToken
from benchhub.accounts.services import api_token_revoke
from benchhub.lib.admin import ReadOnlyAdmin


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Seen and revoked here, never made or edited: a token is made by its
    user on their tokens page or by `manage.py create_api_token` (the only moments
    its secret is shown; a token added here had none, an empty digest, and
    the second one answered 500), and moving one to another user or bringing
    a revoked one back would hand a credential on unseen."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "user__username", "prefix")
    actions = ("revoke",)

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        revoked = [
            token
            for token in queryset.filter(revoked_at__isnull=True)
            if api_token_revoke(user=token.user, token_id=token.pk) is not None
        ]
        self.message_user(request, f"{len(revoked)} token(s) revoked.", messages.SUCCESS)
