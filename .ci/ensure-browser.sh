#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests if it is missing, and a
# CJK font so that seed 004's Japanese title renders as text, not boxes.
# Test tools cannot download browsers here; Playwright drives this one.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing+=(fonts-noto-cjk)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-browser: ${missing[*]} missing and not root: apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "ensure-browser: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
