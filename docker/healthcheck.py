"""Container health check of the web service: exit 0 when gunicorn answers /healthz with 200
(the database answers, no migration pending; benchhub/lib/health.py). Redis away or refusing
writes is 200 too, with the status "degraded": the site still serves.

Reads the port from GUNICORN_BIND (as gunicorn.conf.py does) and sends the first name of
ALLOWED_HOSTS as the Host header, so the check passes whatever host names the site serves.
Standard library only: it runs every few seconds and must not load Django.
"""

import os
import sys
import urllib.error
import urllib.request

PATH = "/healthz"


def main() -> int:
    port = (os.environ.get("GUNICORN_BIND") or "0.0.0.0:8000").rpartition(":")[2]
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = next((h.lstrip(".") for h in hosts if h != "*"), "localhost")
    request = urllib.request.Request(f"http://127.0.0.1:{port}{PATH}", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=8) as response:  # noqa: S310 -- fixed http URL
            return 0 if response.status == 200 else 1
    except (OSError, urllib.error.URLError) as exc:
        print(f"web not healthy: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
