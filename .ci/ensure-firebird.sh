#!/usr/bin/env bash
# Makes sure a Firebird 3 server from Debian's packages is installed and answering on
# 127.0.0.1:3050, for the agent's Firebird tests (backup through the server's tools; the
# load benchmarks through firebird-driver, which loads the client library libfbclient2).
# Safe to run any number of times: every step checks first and does nothing when its
# work is already done.
set -euo pipefail

PASSWORD_FILE=/etc/firebird/3.0/SYSDBA.password
FIREBIRD_PORT=3050

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-firebird: must run as root (apt-get install, starting the server)" >&2
    exit 1
fi

port_answers() {
    # bash's /dev/tcp needs no extra tool; the subshell keeps the descriptor from leaking.
    (exec 3<>"/dev/tcp/127.0.0.1/$FIREBIRD_PORT") 2>/dev/null
}

if ! dpkg-query -W -f='${Status}' firebird3.0-server 2>/dev/null | grep -q "ok installed" \
    || ! dpkg-query -W -f='${Status}' libfbclient2 2>/dev/null | grep -q "ok installed" \
    || ! command -v isql-fb >/dev/null || ! command -v gbak >/dev/null; then
    echo "ensure-firebird: installing firebird3.0-server, firebird3.0-utils and libfbclient2"
    # Without a preseeded answer the package asks whether to start the server and for a
    # SYSDBA password; noninteractive keeps its defaults: a random password written to
    # $PASSWORD_FILE, which is what the tests read.
    echo "firebird3.0-server shared/firebird/enabled boolean true" | debconf-set-selections
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        firebird3.0-server firebird3.0-utils libfbclient2 >/dev/null
fi

if ! port_answers; then
    echo "ensure-firebird: starting fbguard"
    # There is no systemd in containers and CI; start the guardian the way the Debian init
    # script does, as the firebird user, so the files it creates belong to that user.
    # fbguard -daemon detaches by itself; --background on top would leave a zombie behind.
    start-stop-daemon --start --oknodo \
        --chuid firebird:firebird --exec /usr/sbin/fbguard -- -daemon -forever
fi

for _ in $(seq 1 60); do
    if port_answers; then
        break
    fi
    sleep 0.5
done
if ! port_answers; then
    echo "ensure-firebird: nothing answers on 127.0.0.1:$FIREBIRD_PORT after 30 s" >&2
    exit 1
fi

echo "ensure-firebird: Firebird $(dpkg-query -W -f='${Version}' firebird3.0-server)" \
    "answers on 127.0.0.1:$FIREBIRD_PORT"
echo "ensure-firebird: the SYSDBA password is in $PASSWORD_FILE (ISC_PASSWORD=...)"
