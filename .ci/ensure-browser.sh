#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests if it is missing, and a
# CJK font so that seed 004's Japanese title renders as text, not boxes.
# Test tools cannot download browsers here; Playwright drives this one.
set -euo pipefail
. "$(dirname "$0")/apt-missing.sh"
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing+=(fonts-noto-cjk)
install_missing ensure-browser "${missing[@]}"
