# Load the Celery app whenever Django starts, so that tasks bind to it
# (Celery's documented Django layout).
from benchhub.celery import app as celery_app

__all__ = ("celery_app",)
