"""End-to-end test harness: starts the real herald binary and talks HTTP to it.

Environment:
  HERALD_BIN         the server binary (default: build/san/herald, the ASan build,
                     relative to the repository root)
  HERALD_TEST_REDIS  a Redis Cluster URI for the redis backend, e.g.
                     redis://127.0.0.1:7100 (scripts/redis-cluster.sh start 7100).
                     When unset, every redis-parametrized test FAILS (never skips).

Fixtures:
  server         session-scoped, parametrized over "rocksdb" and "redis": a herald
                 without a secret on a free loopback port. Shared by many tests, so
                 every test uses unique (uuid) object and counter names.
  secure_server  the same, started with --secret-file (auth tests); carries
                 .admin_key and .token(user).
  herald         a factory, function-scoped: herald.start(store, *args) starts an
                 extra server (durability, protected mode, settings); stopped at the
                 end of the test.
  backend        "rocksdb" / "redis", for tests that only need the factory.

On stop, a server must exit 0 on SIGTERM, and its stderr must carry no sanitizer
report (AddressSanitizer, LeakSanitizer, UBSan "runtime error:").
"""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import requests

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0
BACKENDS = ["rocksdb", "redis"]

# Sanitizer reports that make a server run a failure.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def herald_bin():
    b = os.environ.get("HERALD_BIN", "build/san/herald")
    p = Path(b)
    if not p.is_absolute():
        p = REPO_ROOT / p
    return p


def redis_uri():
    return os.environ.get("HERALD_TEST_REDIS", "").strip()


def require_bin():
    b = herald_bin()
    if not b.exists():
        pytest.fail(f"herald binary {b} does not exist (build it: make build/herald build/san/herald, "
                    f"or set HERALD_BIN)", pytrace=False)
    return b


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uid(prefix="t"):
    """A unique identifier (valid under the API's identifier rule)."""
    return f"{prefix}-{uuid.uuid4().hex}"


def sanitizer_env(extra=None):
    env = dict(os.environ)
    # Keep sanitizer reports readable and make the server exit on the first one.
    env.setdefault("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1:halt_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    supp = REPO_ROOT / "tests" / "lsan.supp"
    if supp.exists():
        env.setdefault("LSAN_OPTIONS", f"suppressions={supp}:print_suppressions=0")
    if extra:
        env.update(extra)
    return env


def run_cli(*args, timeout=20, input=None):
    """Run the herald binary with args (not serve); returns CompletedProcess (text)."""
    b = require_bin()
    return subprocess.run([str(b), *args], capture_output=True, text=True, timeout=timeout,
                          env=sanitizer_env(), input=input)


def store_arg(backend, data_dir):
    if backend == "rocksdb":
        return f"rocksdb:{data_dir}"
    uri = redis_uri()
    if not uri:
        pytest.fail("HERALD_TEST_REDIS is not set: the redis backend tests need a Redis Cluster "
                    "(scripts/redis-cluster.sh start 7100; export HERALD_TEST_REDIS=redis://127.0.0.1:7100)",
                    pytrace=False)
    return uri


class Herald:
    """One running herald process."""

    def __init__(self, backend, store, args=(), listen_host="127.0.0.1", port=None,
                 workdir=None, secret=None, env=None):
        self.backend = backend
        self.store = store
        self.port = port or free_port()
        self.listen = f"{listen_host}:{self.port}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="herald-e2e-"))
        self.secret = secret
        self.secret_file = None
        self.extra_args = list(args)
        self.env = env
        self.proc = None
        self.ready_line = None
        self.runs = 0
        if secret is not None:
            self.secret_file = self.workdir / "secret"
            self.secret_file.write_text(secret + "\n")

    # -- process --------------------------------------------------------------

    def cmdline(self):
        cmd = [str(require_bin()), "serve", "--listen", self.listen, "--store", self.store]
        if self.secret_file is not None:
            cmd += ["--secret-file", str(self.secret_file)]
        return cmd + self.extra_args

    def start(self, timeout=READY_TIMEOUT):
        """Start the process and wait for its ready line; fail the test with its stderr if not."""
        self.runs += 1
        self.stdout_path = self.workdir / f"stdout.{self.runs}"
        self.stderr_path = self.workdir / f"stderr.{self.runs}"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.cmdline(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=sanitizer_env(self.env), cwd=str(self.workdir))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.stdout_path.read_text(errors="replace")
            for line in text.splitlines():
                if "ready" in line:
                    self.ready_line = line
                    self._check_ready_line(line)
                    return self
            rc = self.proc.poll()
            if rc is not None:
                pytest.fail(f"herald exited with status {rc} before printing its ready line\n"
                            f"command: {' '.join(self.cmdline())}\nstdout:\n{text}\nstderr:\n{self.stderr()}",
                            pytrace=False)
            time.sleep(0.05)
        self.kill()
        pytest.fail(f"herald printed no ready line within {timeout:.0f} s\n"
                    f"command: {' '.join(self.cmdline())}\nstdout:\n{self.stdout_path.read_text(errors='replace')}\n"
                    f"stderr:\n{self.stderr()}", pytrace=False)

    def _check_ready_line(self, line):
        # The ready line carries the URL; use the one it names when it is a loopback one.
        m = re.search(r"https?://[^\s)]+", line)
        assert m, f"the ready line names no URL: {line!r}"
        assert str(self.port) in m.group(0), f"the ready line names another port: {line!r} (listening on {self.listen})"

    def stderr(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, check=True):
        """SIGTERM; returns the exit status. With check, assert exit 0 and a clean stderr."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if check:
                    raise AssertionError(f"herald did not exit within {STOP_TIMEOUT:.0f} s of SIGTERM\n"
                                         f"stderr:\n{self.stderr()[-4000:]}")
        rc = self.proc.returncode
        self.proc = None
        if check:
            self.check_clean(rc)
        return rc

    def check_clean(self, rc):
        err = self.stderr()
        for marker in SANITIZER_MARKERS:
            assert marker not in err, f"sanitizer report in herald's stderr ({marker}):\n{err[-8000:]}"
        assert rc == 0, f"herald exited with status {rc} on SIGTERM (expected 0)\nstderr:\n{err[-4000:]}"

    def kill(self):
        """SIGKILL (kill -9), no checks."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, timeout=READY_TIMEOUT):
        return self.start(timeout)

    # -- HTTP helpers ---------------------------------------------------------

    def session(self, token=None):
        s = requests.Session()
        if token is not None:
            s.headers["Authorization"] = f"Bearer {token}"
        return s

    def put_counter(self, obj, tok, counter=None, session=None, **kw):
        """PUT a token; returns the response."""
        s = session or requests
        return s.put(self.url + counter_path(obj, counter), data=tok, timeout=30, **kw)

    def add(self, obj, tok, counter=None, session=None):
        """PUT a token, assert 200; returns the count."""
        r = self.put_counter(obj, tok, counter, session)
        assert r.status_code == 200, f"PUT {counter_path(obj, counter)} {tok!r}: {r.status_code} {r.text}"
        return parse_count(r)

    def count(self, obj, counter=None, session=None):
        s = session or requests
        r = s.get(self.url + counter_path(obj, counter), timeout=30)
        assert r.status_code == 200, f"GET {counter_path(obj, counter)}: {r.status_code} {r.text}"
        return parse_count(r)

    def counts(self, counter, objects, session=None):
        s = session or requests
        r = s.post(f"{self.url}/api/v1/counters/{counter}/counts", json={"objects": objects}, timeout=30)
        assert r.status_code == 200, f"POST counts: {r.status_code} {r.text}"
        return r.json()["counts"]

    def set_counter(self, counter, session=None, **settings):
        s = session or requests
        r = s.put(f"{self.url}/api/v1/counters/{counter}", json=settings, timeout=30)
        assert r.status_code == 200, f"PUT /api/v1/counters/{counter} {settings}: {r.status_code} {r.text}"
        return r.json()

    def get_counter(self, counter, session=None):
        s = session or requests
        r = s.get(f"{self.url}/api/v1/counters/{counter}", timeout=30)
        assert r.status_code == 200, f"GET /api/v1/counters/{counter}: {r.status_code} {r.text}"
        return r.json()

    def __repr__(self):
        return f"Herald({self.backend}, {self.url})"


def counter_path(obj, counter=None):
    if counter is None:
        return f"/api/v1/counter/{obj}"
    return f"/api/v1/counters/{counter}/{obj}"


def parse_count(r):
    ct = r.headers.get("Content-Type", "")
    assert ct.startswith("text/plain"), f"count answered with Content-Type {ct!r}, expected text/plain: {r.text!r}"
    text = r.text
    assert re.fullmatch(r"\d+\n?", text), f"count body is not a decimal integer: {text!r}"
    return int(text)


def assert_problem(r, status, field=None):
    """Assert an RFC 9457 problem with this status (and a detail naming field)."""
    assert r.status_code == status, (f"{r.request.method} {r.request.url}: expected {status}, "
                                     f"got {r.status_code} {r.text[:500]!r}")
    ct = r.headers.get("Content-Type", "")
    assert ct.startswith("application/problem+json"), f"expected application/problem+json, got {ct!r}: {r.text[:300]!r}"
    p = r.json()
    assert p.get("type") == "about:blank", p
    assert p.get("status") == status, p
    assert isinstance(p.get("title"), str) and p["title"], p
    assert isinstance(p.get("detail"), str) and p["detail"], p
    if field is not None:
        assert field in p["detail"], f"detail should name the field {field!r}: {p['detail']!r}"
    return p


# -- fixtures -----------------------------------------------------------------


def _session_server(request, tmp_path_factory, secret=None):
    backend = request.param
    require_bin()
    work = tmp_path_factory.mktemp(f"herald-{backend}{'-secure' if secret else ''}")
    store = store_arg(backend, work / "data")
    h = Herald(backend, store, workdir=work, secret=secret)
    h.start()
    return h


@pytest.fixture(scope="session", params=BACKENDS)
def server(request, tmp_path_factory):
    h = _session_server(request, tmp_path_factory)
    yield h
    h.stop(check=True)


SECRET = "e2e-secret-" + "k" * 32


@pytest.fixture(scope="session", params=BACKENDS)
def secure_server(request, tmp_path_factory):
    h = _session_server(request, tmp_path_factory, secret=SECRET)
    h.admin_key = SECRET
    _tokens = {}

    def token(user):
        if user not in _tokens:
            r = run_cli("token", user, "--secret-file", str(h.secret_file))
            assert r.returncode == 0, f"herald token {user}: status {r.returncode}, stderr {r.stderr}"
            _tokens[user] = r.stdout.strip()
        return _tokens[user]

    h.token = token
    yield h
    h.stop(check=True)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


class HeraldFactory:
    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.servers = []

    def new(self, backend, *args, data_dir=None, secret=None, listen_host="127.0.0.1", env=None):
        """A Herald, not started. rocksdb: a fresh data dir unless data_dir is given."""
        work = Path(tempfile.mkdtemp(prefix=f"herald-{backend}-", dir=self.tmp_path))
        if data_dir is None:
            data_dir = work / "data"
        h = Herald(backend, store_arg(backend, data_dir), args=args, listen_host=listen_host,
                   workdir=work, secret=secret, env=env)
        h.data_dir = data_dir
        self.servers.append(h)
        return h

    def start(self, backend, *args, **kw):
        return self.new(backend, *args, **kw).start()

    def cleanup(self):
        errors = []
        for h in self.servers:
            if h.alive():
                try:
                    h.stop(check=True)
                except AssertionError as e:
                    errors.append(str(e))
        return errors


@pytest.fixture
def herald(tmp_path):
    require_bin()
    f = HeraldFactory(tmp_path)
    yield f
    errors = f.cleanup()
    assert not errors, "\n".join(errors)
