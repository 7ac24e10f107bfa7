"""Container health check of the proxy: exit 0 when /healthz answers 200 through nginx, so
the check covers nginx and a gunicorn behind it. Sends the first name of ALLOWED_HOSTS as
the Host header (Django refuses others). Standard library only."""

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    listen = os.environ.get("PROXY_LISTEN") or "8080"
    address = listen if ":" in listen else f"127.0.0.1:{listen}"
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = next((h.lstrip(".") for h in hosts if h != "*"), "localhost")
    request = urllib.request.Request(f"http://{address}/healthz", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=8) as response:  # noqa: S310 -- fixed http URL
            return 0 if response.status == 200 else 1
    except (OSError, urllib.error.URLError) as exc:
        print(f"proxy not healthy: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
