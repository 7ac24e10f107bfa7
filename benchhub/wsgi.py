import os

import django
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest

from benchhub.lib.collector import freeze_what_startup_loaded

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")


class Request(WSGIRequest):
    """Django parses the Content-Type while building the request, outside
    any error handling: a parameter such as ``charset*=bogus''utf-8`` (RFC
    2231 with an unknown charset) raised ValueError there, and the server
    answered its own HTML 500 for any path. Such a header is no media type:
    JSON endpoints answer 415 in the error shape."""

    def _set_content_type_params(self, meta) -> None:
        try:
            super()._set_content_type_params(meta)
        except ValueError:
            self.content_type, self.content_params = "", {}


class Handler(WSGIHandler):
    request_class = Request


django.setup(set_prefix=False)
application = Handler()
# Set aside from the collector's passes what every request would walk again.
freeze_what_startup_loaded()
