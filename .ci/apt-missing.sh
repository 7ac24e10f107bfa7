# Sourced by the .ci/ensure-*.sh scripts that install Debian packages only when
# they are missing. install_missing NAME PACKAGE... installs the packages named
# (none: nothing to do), or, when not root, says which to install and exits 1.
install_missing() {
    local name=$1
    shift
    [ $# -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$name: $* missing and not root: install them (apt-get install $*), then run again" >&2
        exit 1
    fi
    echo "$name: installing $*"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
