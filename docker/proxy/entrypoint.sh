#!/bin/sh
# Writes /etc/nginx/conf.d/benchhub.conf from the template and the
# environment, checks it, then runs the command (nginx in the foreground).
#
#   PROXY_LISTEN               where nginx listens: a port (8080) or address:port
#   PROXY_UPSTREAM             gunicorn's address: host:port (web:8000), or several,
#                              comma-separated, one per web machine (without a resolver)
#   PROXY_RESOLVER             a DNS server that resolves PROXY_UPSTREAM again every
#                              few seconds, round-robin over every address it has
#                              (Docker's 127.0.0.11: each `--scale web=N` replica);
#                              empty: resolved once at start
#   BENCHHUB_MAX_UPLOAD_BYTES  the app's upload limit: larger API bodies get 413 here
set -eu
listen=${PROXY_LISTEN:-8080}
upstream=${PROXY_UPSTREAM:-web:8000}
max=${BENCHHUB_MAX_UPLOAD_BYTES:-2097152}
case "$max" in
    '' | *[!0-9]* | 0)
        echo "BENCHHUB_MAX_UPLOAD_BYTES='$max': expected a whole number of bytes, at least 1" >&2
        exit 1 ;;
esac
# Headroom for the form fields and multipart boundaries around a file.
form=$((max + 65536))
case "$upstream" in
    *,*)
        if [ -n "${PROXY_RESOLVER:-}" ]; then
            echo "PROXY_UPSTREAM='$upstream' lists several addresses: that takes PROXY_RESOLVER empty (a resolver asks for one name)" >&2
            exit 1
        fi ;;
esac
if [ -n "${PROXY_RESOLVER:-}" ]; then
    block="resolver ${PROXY_RESOLVER} valid=5s ipv6=off;"
    set_line="set \$benchhub_app ${upstream};"
    target='$benchhub_app'
else
    # One server line per address: nginx takes turns, and leaves one that
    # refused a connection alone for 10 s (max_fails=1 fail_timeout=10s).
    servers=""
    for address in $(echo "$upstream" | tr ',' ' '); do
        servers="${servers}server ${address}; "
    done
    block="upstream benchhub_app { ${servers}keepalive 16; }"
    set_line=""
    target=benchhub_app
fi
sed -e "s|@LISTEN@|${listen}|g" \
    -e "s|@UPSTREAM_BLOCK@|${block}|g" \
    -e "s|@UPSTREAM_SET@|${set_line}|g" \
    -e "s|@UPSTREAM@|${target}|g" \
    -e "s|@MAX_BODY@|${max}|g" \
    -e "s|@MAX_FORM_BODY@|${form}|g" \
    /etc/benchhub-proxy/benchhub.conf.template >/etc/nginx/conf.d/benchhub.conf
nginx -t -q
exec "$@"
