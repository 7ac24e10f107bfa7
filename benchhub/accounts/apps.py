from django.apps import AppConfig
from django.conf import settings

from benchhub.lib.env import importable


class AccountsConfig(AppConfig):
    name = "benchhub.accounts"

    def ready(self) -> None:
        # Every process (gunicorn, Celery, manage.py) stops at its start on a
        # misspelt backend, not the first password reset with a 500. Here, not
        # in settings.py: a backend's module may read the settings as it loads.
        importable("EMAIL_BACKEND", settings.EMAIL_BACKEND)
