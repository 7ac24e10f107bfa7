from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from benchhub.accounts.roles import ROLES, role_grant, user_roles


class Command(BaseCommand):
    help = "Grant (or with --revoke take back) a role: moderator, trusted or admin."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("role", choices=ROLES)
        parser.add_argument("--revoke", action="store_true", help="take the role back")

    def handle(self, *args, username: str, role: str, revoke: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        role_grant(user=user, role=role, revoke=revoke)
        user = get_user_model().objects.get(pk=user.pk)
        self.stdout.write(f"{username}: {', '.join(user_roles(user))}")
