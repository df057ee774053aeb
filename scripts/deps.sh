#!/bin/sh
# Install the Debian packages herald builds, tests and benchmarks with, when
# any is missing. Safe to run again: it does nothing when all are present.
set -eu
PKGS="build-essential pkg-config librocksdb-dev libhiredis-dev libmicrohttpd-dev libjansson-dev
libssl-dev libxxhash-dev libzstd-dev libjemalloc-dev libcriterion-dev redis-server redis-tools python3 python3-pytest
python3-requests wrk nginx-light curl"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "herald: installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
