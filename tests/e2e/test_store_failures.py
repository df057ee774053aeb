"""The store going away (API.md: 503 store unavailable; /healthz is 200 only when the
store answers). These tests start their own throwaway Redis Cluster with
scripts/redis-cluster.sh, so they do not disturb the shared one."""

import socket
import subprocess
import time

import pytest
import requests

from conftest import REPO_ROOT, Herald, assert_problem, free_port, require_bin, uid

CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "redis-cluster.sh"


def _port_free(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
            return True
        except OSError:
            return False


def _free_cluster_base():
    for base in range(7500, 7900, 10):
        if all(_port_free(p) for p in (base, base + 1, base + 2, base + 10000, base + 10001, base + 10002)):
            return base
    pytest.fail("no free ports for a throwaway Redis Cluster in 7500..7900", pytrace=False)


class Cluster:
    def __init__(self, tmp_path):
        if not CLUSTER_SCRIPT.exists():
            pytest.fail(f"{CLUSTER_SCRIPT} is missing", pytrace=False)
        self.base = _free_cluster_base()
        self.dir = tmp_path / f"cluster-{self.base}"
        self.uri = f"redis://127.0.0.1:{self.base}"
        self.running = False

    def start(self):
        r = subprocess.run([str(CLUSTER_SCRIPT), "start", str(self.base), str(self.dir)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"redis-cluster.sh start {self.base}: {r.stdout}{r.stderr}"
        self.running = True

    def stop(self):
        r = subprocess.run([str(CLUSTER_SCRIPT), "stop", str(self.base), str(self.dir)],
                           capture_output=True, text=True, timeout=60)
        self.running = False
        assert r.returncode == 0, f"redis-cluster.sh stop {self.base}: {r.stdout}{r.stderr}"


@pytest.fixture
def own_cluster(tmp_path):
    c = Cluster(tmp_path)
    c.start()
    yield c
    if c.running:
        c.stop()


def wait_status(url, want, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = requests.get(url, timeout=5).status_code
        except requests.exceptions.RequestException as e:
            last = repr(e)
        if last == want:
            return True
        time.sleep(0.2)
    raise AssertionError(f"GET {url}: wanted {want} within {timeout} s, last {last}")


def test_redis_cluster_down_is_503_and_recovers(herald, own_cluster):
    require_bin()
    h = herald.new("rocksdb")          # a placeholder store, replaced just below
    h.store = own_cluster.uri
    h.backend = "redis"
    h.start()
    obj = uid("obj")
    assert h.add(obj, "t1") == 1
    assert requests.get(f"{h.url}/healthz").status_code == 200

    own_cluster.stop()
    t0 = time.monotonic()
    wait_status(f"{h.url}/healthz", 503, timeout=15)
    assert time.monotonic() - t0 < 15
    t0 = time.monotonic()
    r = requests.put(f"{h.url}/api/v1/counter/{obj}", data="t2", timeout=30)
    assert_problem(r, 503)
    assert time.monotonic() - t0 < 10, "a PUT with the store down took over 10 s to fail"
    r = requests.get(f"{h.url}/api/v1/counter/{obj}", timeout=30)
    assert_problem(r, 503)
    r = requests.post(f"{h.url}/api/v1/counters/default/counts", json={"objects": [obj]}, timeout=30)
    assert_problem(r, 503)
    # /metrics still answers: it is how an operator sees the outage.
    assert requests.get(f"{h.url}/metrics", timeout=10).status_code == 200

    own_cluster.start()               # a fresh, empty cluster on the same ports
    wait_status(f"{h.url}/healthz", 200, timeout=30)
    obj2 = uid("obj")
    deadline = time.monotonic() + 15
    while True:
        r = requests.put(f"{h.url}/api/v1/counter/{obj2}", data="t", timeout=30)
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert r.status_code == 200, f"PUT after the cluster came back: {r.status_code} {r.text}"
    assert h.count(obj2) == 1
    h.stop(check=True)


def test_unreachable_store_at_startup(tmp_path):
    """Either refuse to start (non-zero exit, a message) or start and say 503; never hang."""
    b = require_bin()
    port = free_port()
    dead = free_port()
    h = Herald("redis", f"redis://127.0.0.1:{dead}", workdir=tmp_path, port=port)
    proc = subprocess.Popen(h.cmdline(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=20)
        assert proc.returncode != 0, f"exited 0 with an unreachable store: {out} {err}"
        assert err.strip(), "no message"
        assert "AddressSanitizer" not in err and "runtime error:" not in err, err
    except subprocess.TimeoutExpired:
        # It is running: it must have said ready and answer 503 on /healthz.
        try:
            r = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
            assert r.status_code == 503, f"healthz with an unreachable store: {r.status_code}"
        finally:
            proc.terminate()
            proc.communicate(timeout=20)


def test_unusable_rocksdb_path(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    h = Herald("rocksdb", f"rocksdb:{f}/db", workdir=tmp_path)
    try:
        p = subprocess.run(h.cmdline(), capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("herald started on a RocksDB path under a regular file", pytrace=False)
    assert p.returncode != 0 and "ready" not in p.stdout
    assert p.stderr.strip()
