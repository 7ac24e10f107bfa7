"""The embedded default's database backend: Django's SQLite backend with the
writers of one process queued in order (base.py)."""
