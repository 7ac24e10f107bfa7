#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests if it is missing. Test
# tools cannot download browsers here; Playwright drives this one.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-browser: /usr/bin/chromium missing and not root: apt-get install chromium" >&2
    exit 1
fi
echo "ensure-browser: installing chromium"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
