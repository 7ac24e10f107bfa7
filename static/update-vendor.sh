#!/usr/bin/env bash
# Copies the pinned front-end libraries from the npm registry into
# static/vendor/. BenchHub serves them itself: no CDN at run time.
set -euo pipefail
cd "$(dirname "$0")/.."  # repository root

HTMX_VERSION=2.0.11      # 2.x: htmx 4 drops attribute inheritance that base.html relies on
CHARTJS_VERSION=4.5.1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX_VERSION" "chart.js@$CHARTJS_VERSION" >/dev/null)
mkdir -p static/vendor
tar -xzf "$work/htmx.org-$HTMX_VERSION.tgz" -C "$work" package/dist/htmx.min.js
cp "$work/package/dist/htmx.min.js" static/vendor/htmx.min.js
rm -rf "$work/package"
tar -xzf "$work/chart.js-$CHARTJS_VERSION.tgz" -C "$work" package/dist/chart.umd.min.js package/LICENSE.md
cp "$work/package/dist/chart.umd.min.js" static/vendor/chart.umd.min.js
cp "$work/package/LICENSE.md" static/vendor/chart.js-LICENSE.md
cat > static/vendor/VERSIONS <<VERSIONS
htmx.org $HTMX_VERSION
chart.js $CHARTJS_VERSION
VERSIONS
echo "vendored htmx $HTMX_VERSION and Chart.js $CHARTJS_VERSION into static/vendor/"
