from django.apps import AppConfig


class DevserverConfig(AppConfig):
    """``manage.py runserver``, the embedded default's server (``make run``),
    with its answers sent as soon as they are written. Listed before
    django.contrib.staticfiles, whose runserver it extends: the first app
    that has a command is the one Django runs."""

    name = "benchhub.devserver"
