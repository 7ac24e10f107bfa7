#!/usr/bin/env bash
# Copies the pinned front-end libraries from the npm registry into
# static/vendor/. BenchHub serves them itself: no CDN at run time.
# axe-core, which only the browser tests use, goes to tests/browser/vendor/:
# it is not served.
set -euo pipefail
cd "$(dirname "$0")/.."  # repository root

HTMX_VERSION=2.0.11      # 2.x: htmx 4 drops attribute inheritance that base.html relies on
CHARTJS_VERSION=4.5.1
AXE_VERSION=4.11.0        # axe-core: the browser tests' accessibility checks

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX_VERSION" "chart.js@$CHARTJS_VERSION" "axe-core@$AXE_VERSION" >/dev/null)
mkdir -p static/vendor
tar -xzf "$work/htmx.org-$HTMX_VERSION.tgz" -C "$work" package/dist/htmx.min.js
cp "$work/package/dist/htmx.min.js" static/vendor/htmx.min.js
rm -rf "$work/package"
tar -xzf "$work/chart.js-$CHARTJS_VERSION.tgz" -C "$work" package/dist/chart.umd.min.js package/LICENSE.md
cp "$work/package/dist/chart.umd.min.js" static/vendor/chart.umd.min.js
cp "$work/package/LICENSE.md" static/vendor/chart.js-LICENSE.md
rm -rf "$work/package"
tar -xzf "$work/axe-core-$AXE_VERSION.tgz" -C "$work" package/axe.min.js package/LICENSE
mkdir -p tests/browser/vendor
cp "$work/package/axe.min.js" tests/browser/vendor/axe.min.js
cp "$work/package/LICENSE" tests/browser/vendor/axe-core-LICENSE
cat > static/vendor/VERSIONS <<VERSIONS
htmx.org $HTMX_VERSION
chart.js $CHARTJS_VERSION
VERSIONS
echo "axe-core $AXE_VERSION" > tests/browser/vendor/VERSIONS
echo "vendored htmx $HTMX_VERSION, Chart.js $CHARTJS_VERSION and axe-core $AXE_VERSION into static/vendor/"
