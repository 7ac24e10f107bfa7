#!/bin/sh
# Run a Celery worker and start it again whenever it ends with an error: a
# belt for the worker's own reconnection (CELERY_BROKER_CONNECTION_* in
# benchhub/settings.py), so that a broker outage that ends a worker anyway
# (an unrecoverable error in the consumer) costs seconds, not the queue.
# A clean stop (exit 0, as SIGTERM's warm shutdown ends) or a signal ends
# the loop. Usage: worker-supervised.sh CELERY-ARGS...
# WORKER_RESTART_SECONDS (default 2): the pause before a restart.
pause="${WORKER_RESTART_SECONDS:-2}"
child=""
stop() {
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child"
    exit 0
}
trap stop TERM INT
while :; do
    celery "$@" &
    child=$!
    wait "$child"
    status=$?
    child=""
    [ "$status" -eq 0 ] && exit 0
    echo "worker-supervised: celery exited with status $status; starting it again in ${pause} s" >&2
    sleep "$pause"
done
