from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from benchhub.accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a user (created if missing) and print it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="agent", help="label to tell tokens apart")
        parser.add_argument(
            "--create-user", action="store_true", help="create the user if it does not exist"
        )

    def handle(self, *args, username: str, name: str, create_user: bool, **options):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create_user:
                raise CommandError(f"no user {username!r}; pass --create-user to create it")
            user = User.objects.create_user(username=username)
        _, secret = api_token_create(user=user, name=name)
        self.stdout.write(secret)
