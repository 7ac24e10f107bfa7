"""Posting a submission document, as JSON, to the upload API."""

import json

from rest_framework.test import APIClient

URL = "/api/v1/submissions/"


def post(client: APIClient, document, **extra):
    return client.post(URL, data=json.dumps(document), content_type="application/json", **extra)
