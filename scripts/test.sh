#!/bin/sh
# The whole test suite, as `make test` runs it (after building):
#   1. a throwaway 3-master Redis Cluster on loopback ports (HERALD_TEST_REDIS_PORT,
#      default 7100..7102), stopped again on exit;
#   2. the unit tests (Criterion, ASan + UBSan build): every module, and the
#      store conformance suite on RocksDB and on the cluster;
#   3. the end-to-end tests (pytest) against the real server (ASan build),
#      once per backend.
# Exits non-zero if either suite fails; both always run.
set -u
cd "$(dirname "$0")/.."
PORT=${HERALD_TEST_REDIS_PORT:-7100}
scripts/redis-cluster.sh start "$PORT" || { echo "test.sh: could not start a Redis Cluster" >&2; exit 1; }
trap 'scripts/redis-cluster.sh stop "$PORT" >/dev/null 2>&1' EXIT INT TERM
export HERALD_TEST_REDIS="redis://127.0.0.1:$PORT"
# RocksDB keeps a few static objects alive until exit; they are not leaks of ours.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"

echo "== unit tests (RocksDB and Redis Cluster) =="
build/san/unit -j2
unit=$?

echo "== end-to-end tests (RocksDB and Redis Cluster) =="
HERALD_BIN="$(pwd)/build/san/herald" /usr/bin/python3 -m pytest tests/e2e -q -p no:cacheprovider
e2e=$?

echo "== summary: unit $( [ $unit -eq 0 ] && echo passed || echo FAILED ), end-to-end $( [ $e2e -eq 0 ] && echo passed || echo FAILED ) =="
[ $unit -eq 0 ] && [ $e2e -eq 0 ]
