"""The command line (API.md "Running"): --help, --version, bad arguments, --set, --config,
the ready line and clean shutdown on SIGTERM / SIGINT."""

import os
import signal
import subprocess
import time

import pytest
import requests

from conftest import free_port, run_cli, uid


def test_help():
    r = run_cli("--help")
    assert r.returncode == 0, f"--help exited {r.returncode}: {r.stderr}"
    out = r.stdout + r.stderr
    for word in ["serve", "token", "--listen", "--store", "--secret-file"]:
        assert word in out, f"--help does not mention {word}:\n{out}"


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0, f"--version exited {r.returncode}: {r.stderr}"
    out = (r.stdout + r.stderr).strip()
    assert out and any(ch.isdigit() for ch in out), f"--version printed {out!r}"
    assert len(out.splitlines()) <= 3


@pytest.mark.parametrize("args", [
    ["no-such-command"],
    ["serve", "--no-such-option"],
    ["serve", "--listen"],
    ["serve", "--listen", "not-an-address"],
    ["serve", "--listen", "127.0.0.1:99999"],
    ["serve", "--store", "bogus:xyz"],
    ["serve", "--store", "redis://"],
    ["serve", "--store", "rocksdb:"],
    ["serve", "--store", "rocksdb:/tmp/herald-cli-unused?colour=red"],
    ["serve", "--store", "rocksdb:/tmp/herald-cli-unused?off=nothing"],
    ["serve", "--set", "memory=lots"],
    ["serve", "--set", "store_cache=1g"],
    ["serve", "--threads", "-1"],
    ["serve", "--threads", "abc"],
    ["serve", "--set", "no_such_setting=1"],
    ["serve", "--set", "counter_ttl=forever"],
    ["serve", "--set", "counter_exact_limit=0"],
    ["serve", "--set", "counter_exact_limit"],
    ["serve", "--config", "/nonexistent/herald.conf"],
])
def test_bad_arguments_exit_nonzero(args, tmp_path):
    # A fresh data dir so that a (wrongly) starting server does not touch ./data.
    if args[0] == "serve" and "--store" not in args:
        args = args + ["--store", f"rocksdb:{tmp_path / 'data'}"]
    if args[0] == "serve" and "--listen" not in args:
        args = args + ["--listen", f"127.0.0.1:{free_port()}"]
    try:
        r = run_cli(*args, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"herald {' '.join(args)} kept running instead of rejecting its arguments", pytrace=False)
    assert r.returncode != 0, f"herald {' '.join(args)} exited 0"
    assert r.returncode != 0 and r.returncode < 128, f"herald {' '.join(args)} crashed: {r.returncode}\n{r.stderr}"
    assert r.stderr.strip(), f"herald {' '.join(args)}: no message on stderr"
    assert "AddressSanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr


def test_set_counter_defaults(herald, backend):
    h = herald.start(backend, "--set", "counter_ttl=2h", "--set", "counter_exact_limit=123")
    c = uid("cnt")
    got = h.get_counter(c)
    assert (got["ttl_ms"], got["exact_limit"]) == (2 * 3600 * 1000, 123), got
    # A counter's own settings still win.
    h.set_counter(c, exact_limit=7)
    assert h.get_counter(c)["exact_limit"] == 7
    assert h.get_counter(uid("cnt"))["ttl_ms"] == 7200000


@pytest.mark.parametrize("value,ms", [("1500ms", 1500), ("90s", 90000), ("45m", 2700000), ("30d", 2592000000)])
def test_duration_suffixes(herald, value, ms):
    h = herald.start("rocksdb", "--set", f"counter_ttl={value}")
    assert h.get_counter(uid("cnt"))["ttl_ms"] == ms


def test_set_ttl_applies(herald, backend):
    """The server-wide counter_ttl is used by counters without their own settings."""
    h = herald.start(backend, "--set", "counter_ttl=1s")
    obj, c = uid("obj"), uid("cnt")
    assert h.add(obj, "t", counter=c) == 1
    time.sleep(1.5)
    assert h.count(obj, counter=c) == 0


def test_set_exact_limit_applies(herald, backend):
    h = herald.start(backend, "--set", "counter_exact_limit=10")
    obj = uid("obj")
    s = requests.Session()
    for i in range(1, 11):
        assert h.add(obj, f"t{i}", session=s) == i
    for i in range(11, 400):
        h.add(obj, f"t{i}", session=s)
    n = h.count(obj, session=s)
    assert 370 <= n <= 430, f"399 tokens past a limit of 10 estimated as {n}"


def test_config_file(herald, tmp_path):
    conf = tmp_path / "herald.conf"
    conf.write_text("# a comment\ncounter_ttl = 45m\n\ncounter_exact_limit = 321\n")
    h = herald.start("rocksdb", "--config", str(conf))
    got = h.get_counter(uid("cnt"))
    assert (got["ttl_ms"], got["exact_limit"]) == (2700000, 321), got


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_clean_exit_on_signal(herald, sig):
    h = herald.start("rocksdb")
    obj = uid("obj")
    assert h.add(obj, "t") == 1
    h.proc.send_signal(sig)
    rc = h.proc.wait(timeout=20)
    h.check_clean(rc)
    h.proc = None
    # And it starts again on the same data, with the count.
    h.start()
    assert h.count(obj) == 1


def test_ready_line(herald):
    h = herald.start("rocksdb")
    line = h.ready_line
    assert "ready" in line and f"http://127.0.0.1:{h.port}" in line, line
    out = h.stdout_path.read_text()
    assert len(out.splitlines()) == 1, f"expected exactly one line on stdout: {out!r}"


def test_io_threads_default_per_store(herald, backend):
    # One I/O thread per core on RocksDB, where a request is CPU work; four per core on Redis
    # Cluster, where a request mostly waits for its round trips. --threads overrides both.
    per_core = 4 if backend == "redis" else 1
    h = herald.start(backend)
    assert f"{per_core * os.cpu_count()} I/O threads" in h.ready_line, h.ready_line
    h.stop(check=True)
    h = herald.start(backend, "--threads", "3")
    assert "3 I/O threads" in h.ready_line, h.ready_line


def test_threads_option(herald, backend):
    h = herald.start(backend, "--threads", "1")
    obj = uid("obj")
    assert h.add(obj, "a") == 1
    assert h.count(obj) == 1
