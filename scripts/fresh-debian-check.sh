#!/bin/bash
# fresh-debian-check.sh — check the README's two commands on a fresh Debian 12.
#
# Builds a bare Debian 12 userland with debootstrap (variant minbase) in DIR,
# puts a clean clone of this repository's HEAD in it, installs only `make`
# there (what the README says a bare image needs first), then runs, chrooted:
#   make test   (it installs the rest, starts its own Redis Cluster, runs
#                every suite)
#   make run    (it loads the demo dataset and serves on 127.0.0.1:8080),
#               probed from outside with curl: a counter PUT twice and read,
#               a demo user's timeline, a story; then stopped with SIGTERM.
# The chroot shares this machine's kernel and network, so ports 7100-7102 and
# 8080 must be free. Needs root, curl, and Debian's mirror. Logs go to
# DIR.log-test and DIR.log-run.
#
# usage: sudo scripts/fresh-debian-check.sh [DIR]     (default /tmp/herald-deb12)
set -eu

DIR=${1:-/tmp/herald-deb12}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PORT=8080

log() { printf '%s fresh-debian-check: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot need it)"
command -v curl >/dev/null || die "curl is needed for the probes"
command -v debootstrap >/dev/null || {
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
}
curl -s -o /dev/null "http://127.0.0.1:$PORT/" && die "port $PORT is in use"

SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill -TERM -- "-$SERVER" 2>/dev/null || true
    for m in dev/shm dev/pts dev sys proc; do
        mountpoint -q "$DIR/$m" && umount -l "$DIR/$m" || true
    done
}
trap cleanup EXIT INT TERM

log "debootstrap bookworm (minbase) into $DIR"
rm -rf "$DIR"
debootstrap --variant=minbase bookworm "$DIR" "$MIRROR" >"$DIR.log-debootstrap" 2>&1 ||
    die "debootstrap (see $DIR.log-debootstrap)"
mount -t proc proc "$DIR/proc"
mount -t sysfs sys "$DIR/sys"
mount --bind /dev "$DIR/dev"
mount --bind /dev/pts "$DIR/dev/pts"
mkdir -p "$DIR/dev/shm" && mount -t tmpfs shm "$DIR/dev/shm"
cp /etc/resolv.conf "$DIR/etc/resolv.conf"

log "a clean clone of $(git -C "$REPO" rev-parse --short HEAD) into $DIR/root/herald"
rm -rf "$DIR/root/herald"
git clone -q "$REPO" "$DIR/root/herald"

log "apt-get install make (the one package the README asks for)"
chroot "$DIR" /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive;
    apt-get update -q >/dev/null && apt-get install -y -q make >/dev/null' || die "installing make"

log "make test (log: $DIR.log-test)"
start=$(date +%s)
chroot "$DIR" /bin/sh -c 'cd /root/herald && make test' >"$DIR.log-test" 2>&1 ||
    die "make test (see $DIR.log-test)"
log "make test passed in $(($(date +%s) - start)) s: $(grep -E 'Synthesis|passed in' "$DIR.log-test" | tr '\n' ' ')"

log "make run (log: $DIR.log-run)"
setsid chroot "$DIR" /bin/sh -c 'cd /root/herald && exec make run' >"$DIR.log-run" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
    grep -q "herald ready" "$DIR.log-run" && break
    kill -0 "$SERVER" 2>/dev/null || die "make run exited (see $DIR.log-run)"
    sleep 1
done
grep -q "herald ready" "$DIR.log-run" || die "no 'herald ready' within 10 minutes"

url="http://127.0.0.1:$PORT/api/v1"
obj="check-$(date +%s)"
[ "$(curl -s -X PUT -d alice "$url/counter/$obj")" = 1 ] || die "first counter PUT"
[ "$(curl -s -X PUT -d bob "$url/counter/$obj")" = 2 ] || die "second counter PUT"
[ "$(curl -s "$url/counter/$obj")" = 2 ] || die "counter GET"
curl -s "$url/users/u1/timeline?limit=2" | grep -q '"activities":\[{' || die "the demo user u1 has no timeline"
curl -s -d "{\"url\": \"https://example.com/$obj\", \"content\": \"<p>x</p>\"}" "$url/stories" |
    grep -q '"duplicate":false' || die "creating a story"
log "make run served: a counter, u1's timeline and a new story answered as expected"

kill -TERM -- "-$SERVER"
wait "$SERVER" 2>/dev/null || true
SERVER=""
grep -q "info stopped" "$DIR.log-run" || die "herald did not stop cleanly on SIGTERM (see $DIR.log-run)"
log "OK: make test and make run work on a fresh Debian 12 ($DIR)"
