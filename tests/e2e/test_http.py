"""The HTTP layer: input validation, RFC 9457 errors, 404/405/413, the protocol itself
(keep-alive, chunked bodies, pipelining, garbage), /healthz and /metrics.

Every rejected request is followed by a check that nothing stored changed.
"""

import json
import re
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests

from conftest import assert_problem, parse_count, uid

MIB = 1024 * 1024

BAD_IDS = [
    "bad!id", "bad$", "a,b", "a;b", "a=b", "a*b", "a'b", "a(b)", "a+b", "a b", "a\tb", "a%b",
    "caf\u00e9", "x" * 129, "a[b]", "a\"b", "a<b>", "a|b", "a^b", "a`b", "a{b}",
]


def raw_request(url, data, method="PUT", path=None, headers=None, read_timeout=10):
    """Send one HTTP/1.1 request on a fresh socket (the body may be refused early),
    return (status, headers dict, body bytes). Tolerates the server closing while we send."""
    u = urlsplit(url)
    host, port = u.hostname, u.port
    path = path or u.path or "/"
    hdrs = {"Host": f"{host}:{port}", "Content-Length": str(len(data)), "Connection": "close"}
    hdrs.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    s = socket.create_connection((host, port), timeout=read_timeout)
    try:
        s.sendall(head.encode("latin-1"))
        try:
            view = memoryview(data)
            for i in range(0, len(data), 65536):
                s.sendall(view[i:i + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                resp += chunk
                if _complete(resp):
                    break
        except (ConnectionResetError, socket.timeout):
            pass
    finally:
        s.close()
    return parse_response(resp)


def _complete(resp):
    if b"\r\n\r\n" not in resp:
        return False
    head, body = resp.split(b"\r\n\r\n", 1)
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    return bool(m) and len(body) >= int(m.group(1))


def parse_response(resp):
    assert resp, "the server closed the connection without an answer"
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    assert m, f"not an HTTP response: {resp[:200]!r}"
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(m.group(1)), hdrs, body


# -- validation ----------------------------------------------------------------


def test_bad_object_ids(server):
    s = requests.Session()
    for bad in BAD_IDS:
        r = s.put(f"{server.url}/api/v1/counter/{bad}", data="tok")
        assert_problem(r, 400, "object")
        r = s.get(f"{server.url}/api/v1/counter/{bad}")
        assert_problem(r, 400, "object")
        r = s.put(f"{server.url}/api/v1/counters/c1/{bad}", data="tok")
        assert_problem(r, 400, "object")
        r = s.get(f"{server.url}/api/v1/counters/c1/{bad}")
        assert_problem(r, 400, "object")


def test_bad_counter_names(server):
    s = requests.Session()
    obj = uid("obj")
    for bad in BAD_IDS:
        r = s.put(f"{server.url}/api/v1/counters/{bad}/{obj}", data="tok")
        assert_problem(r, 400, "counter")
        r = s.get(f"{server.url}/api/v1/counters/{bad}/{obj}")
        assert_problem(r, 400, "counter")
        r = s.post(f"{server.url}/api/v1/counters/{bad}/counts", json={"objects": ["a"]})
        assert_problem(r, 400, "counter")
        r = s.put(f"{server.url}/api/v1/counters/{bad}", json={"ttl_ms": 5000})
        assert_problem(r, 400, "counter")
        r = s.get(f"{server.url}/api/v1/counters/{bad}")
        assert_problem(r, 400, "counter")


def test_bad_tokens_change_nothing(server):
    s = requests.Session()
    obj = uid("obj")
    c = uid("cnt")
    assert server.add(obj, "first", session=s) == 1
    assert server.add(obj, "first", counter=c, session=s) == 1
    for body in [b"", b"x" * 257, b"y" * 1000, b"y" * 10000]:
        for path in [f"/api/v1/counter/{obj}", f"/api/v1/counters/{c}/{obj}"]:
            r = s.put(server.url + path, data=body)
            if len(body) > 4096 and r.status_code == 413:
                # A body far over the token limit may be refused as too large by the
                # route's body limit before the token is looked at: fine.
                assert_problem(r, 413)
            else:
                assert_problem(r, 400, "token")
        assert server.count(obj, session=s) == 1, f"a rejected token ({len(body)} bytes) changed the count"
        assert server.count(obj, counter=c, session=s) == 1
    # The rejected 257-byte token's 256-byte prefix was not stored either.
    assert server.add(obj, b"x" * 256, session=s) == 2


def test_put_without_body(server):
    obj = uid("obj")
    r = requests.put(f"{server.url}/api/v1/counter/{obj}")
    assert_problem(r, 400, "token")
    assert server.count(obj) == 0


def test_bad_counts_requests(server):
    s = requests.Session()
    c = uid("cnt")
    obj = uid("obj")
    server.add(obj, "t", counter=c, session=s)
    url = f"{server.url}/api/v1/counters/{c}/counts"
    cases = [
        (b"{", None),
        (b"", None),
        (b"not json", None),
        (b"[]", None),
        (b'"objects"', None),
        (b"{}", "objects"),
        (b'{"objects": null}', "objects"),
        (b'{"objects": "a"}', "objects"),
        (b'{"objects": []}', "objects"),
        (b'{"objects": [1, 2]}', "objects"),
        (b'{"objects": ["a", 2]}', "objects"),
        (b'{"objects": [["a"]]}', "objects"),
        (b'{"objects": [{"a": 1}]}', "objects"),
        (b'{"objects": ["bad id"]}', "objects"),
        (b'{"objects": [""]}', "objects"),
        (json.dumps({"objects": ["x" * 129]}).encode(), "objects"),
        (json.dumps({"objects": [f"o{i}" for i in range(1001)]}).encode(), "objects"),
        (b'{"objects": ["a"]} trailing', None),
    ]
    for body, field in cases:
        r = s.post(url, data=body, headers={"Content-Type": "application/json"})
        assert_problem(r, 400, field)
    assert server.count(obj, counter=c, session=s) == 1


def test_bad_settings_change_nothing(server):
    s = requests.Session()
    c = uid("cnt")
    good = server.set_counter(c, ttl_ms=60000, exact_limit=500, session=s)
    url = f"{server.url}/api/v1/counters/{c}"
    cases = [
        (b"{", None),
        (b"", None),
        (b"[]", None),
        (b'{"ttl_ms": 0}', "ttl_ms"),
        (b'{"ttl_ms": -1000}', "ttl_ms"),
        (b'{"ttl_ms": "1000"}', "ttl_ms"),
        (b'{"ttl_ms": 1.5}', "ttl_ms"),
        (b'{"ttl_ms": 1e400}', None),
        (b'{"exact_limit": 0}', "exact_limit"),
        (b'{"exact_limit": -1}', "exact_limit"),
        (b'{"exact_limit": 1000001}', "exact_limit"),
        (b'{"exact_limit": "10"}', "exact_limit"),
        (b'{"exact_limit": 10.5}', "exact_limit"),
        (b'{"exact_limit": true}', "exact_limit"),
        # one good field, one bad: the good one is not applied either
        (b'{"ttl_ms": 7000, "exact_limit": 0}', "exact_limit"),
        (b'{"ttl_ms": 0, "exact_limit": 7}', "ttl_ms"),
    ]
    for body, field in cases:
        r = s.put(url, data=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, f"settings PUT {body!r}: expected 400, got {r.status_code} {r.text[:300]}"
        assert_problem(r, 400, field)
        got = server.get_counter(c, session=s)
        assert (got["ttl_ms"], got["exact_limit"]) == (60000, 500), \
            f"a rejected settings PUT {body!r} changed the settings: {got}"
    assert good["ttl_ms"] == 60000


def test_problem_shape(server):
    r = requests.get(f"{server.url}/api/v1/counter/bad!id")
    p = assert_problem(r, 400, "object")
    assert p["title"] == "Bad Request"
    r = requests.get(f"{server.url}/api/v1/no-such-thing")
    p = assert_problem(r, 404)
    assert p["title"] == "Not Found"


# -- 404 / 405 / 413 -----------------------------------------------------------


@pytest.mark.parametrize("path", [
    "/", "/api", "/api/v1", "/api/v1/", "/api/v1/counter", "/api/v1/counter/a/b",
    "/api/v2/counter/a", "/api/v1/counters/c/o/extra", "/api/v1/nothing", "/healthz/x",
    "/API/V1/COUNTER/a", "/favicon.ico",
])
def test_unknown_paths_404(server, path):
    r = requests.get(server.url + path)
    assert_problem(r, 404)
    r = requests.put(server.url + path, data="t")
    assert r.status_code in (404, 405), f"PUT {path}: {r.status_code}"


def test_empty_object_segment(server):
    r = requests.put(f"{server.url}/api/v1/counter/", data="t")
    assert r.status_code in (400, 404), r.text
    assert r.headers.get("Content-Type", "").startswith("application/problem+json")


@pytest.mark.parametrize("method,path", [
    ("DELETE", "/api/v1/counter/{o}"),
    ("POST", "/api/v1/counter/{o}"),
    ("PATCH", "/api/v1/counter/{o}"),
    ("DELETE", "/api/v1/counters/c/{o}"),
    ("POST", "/api/v1/counters/c/{o}"),
    ("POST", "/api/v1/counters/c"),
    ("DELETE", "/api/v1/counters/c"),
    ("POST", "/healthz"),
    ("PUT", "/metrics"),
])
def test_wrong_method_405(server, method, path):
    obj = uid("obj")
    r = requests.request(method, server.url + path.format(o=obj), data="tok")
    assert_problem(r, 405)
    if "{o}" in path:
        assert server.count(obj) == 0


def test_object_named_counts(server):
    """GET/PUT .../counts is the object "counts"; only POST is the batch call."""
    c = uid("cnt")
    assert server.add("counts", "t1", counter=c) == 1
    assert server.count("counts", counter=c) == 1
    assert server.counts(c, ["counts"]) == {"counts": 1}


def test_405_has_allow_header(server):
    r = requests.delete(f"{server.url}/api/v1/counter/{uid('o')}")
    assert r.status_code == 405
    allow = r.headers.get("Allow")
    assert allow, "405 without an Allow header (RFC 9110 15.5.6)"
    methods = {m.strip() for m in allow.split(",")}
    assert {"GET", "PUT"} <= methods, allow


def test_body_too_large_413(server):
    obj = uid("obj")
    server.add(obj, "t")
    status, hdrs, body = raw_request(f"{server.url}/api/v1/counter/{obj}", b"x" * (MIB + 1))
    assert status == 413, f"PUT of 1 MiB + 1: got {status} {body[:200]!r}"
    assert hdrs.get("content-type", "").startswith("application/problem+json"), hdrs
    status, _, body = raw_request(f"{server.url}/api/v1/counters/{uid('c')}/counts", b" " * (8 * MIB),
                                  method="POST", headers={"Content-Type": "application/json"})
    assert status == 413, f"POST counts of 8 MiB: got {status} {body[:200]!r}"
    assert server.count(obj) == 1
    # The server is still fine.
    assert server.add(obj, "t2") == 2


def test_body_limit_is_1mib(server):
    """A 1 MiB JSON body (padded with whitespace) is accepted; one byte more is 413."""
    c = uid("cnt")
    obj = uid("obj")
    server.add(obj, "t", counter=c)
    doc = json.dumps({"objects": [obj]}).encode()
    body = doc + b" " * (MIB - len(doc))
    assert len(body) == MIB
    r = requests.post(f"{server.url}/api/v1/counters/{c}/counts", data=body,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200, f"1 MiB body: {r.status_code} {r.text[:300]}"
    assert r.json() == {"counts": {obj: 1}}
    status, _, _ = raw_request(f"{server.url}/api/v1/counters/{c}/counts", body + b" ", method="POST",
                               headers={"Content-Type": "application/json"})
    assert status == 413


def test_large_chunked_body_413(server):
    obj = uid("obj")

    def gen():
        for _ in range(20):
            yield b"z" * 65536 * 2   # 2.5 MiB in all

    try:
        r = requests.put(f"{server.url}/api/v1/counter/{obj}", data=gen())
        assert r.status_code == 413, r.status_code
    except requests.exceptions.ConnectionError:
        pass  # refused while sending: acceptable, as long as nothing was stored
    assert server.count(obj) == 0


# -- protocol ------------------------------------------------------------------


def test_chunked_token_put(server):
    obj = uid("obj")

    def gen():
        yield b"chunked-"
        yield b"token"

    r = requests.put(f"{server.url}/api/v1/counter/{obj}", data=gen())
    assert r.status_code == 200, r.text
    assert parse_count(r) == 1
    assert server.add(obj, "chunked-token") == 1, "the chunked body was not the token"


def test_keep_alive_many_requests(server):
    s = requests.Session()
    obj = uid("obj")
    for i in range(200):
        r = s.put(f"{server.url}/api/v1/counter/{obj}", data=f"t{i % 50}")
        assert r.status_code == 200
    assert server.count(obj, session=s) == 50


def test_pipelined_requests(server):
    obj = uid("obj")
    u = urlsplit(server.url)
    req = (f"PUT /api/v1/counter/{obj} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nt1"
           f"PUT /api/v1/counter/{obj} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nt2"
           f"GET /api/v1/counter/{obj} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(req)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    statuses = re.findall(rb"HTTP/1\.1 (\d{3})", data)
    assert statuses == [b"200", b"200", b"200"], data[:500]
    assert server.count(obj) == 2


def test_query_string_ignored(server):
    obj = uid("obj")
    r = requests.put(f"{server.url}/api/v1/counter/{obj}?cache=1", data="t")
    assert r.status_code == 200, r.text
    r = requests.get(f"{server.url}/api/v1/counter/{obj}?_=12345")
    assert r.status_code == 200 and parse_count(r) == 1, r.text


def test_percent_encoded_object_is_the_same_object(server):
    """%41 is "A": a server that decodes the path must not count it as another object."""
    obj = uid("obj")
    enc = "".join(f"%{b:02X}" for b in obj.encode())
    assert server.add(obj, "t") == 1
    r = requests.get(f"{server.url}/api/v1/counter/{enc}")
    if r.status_code == 200:
        assert parse_count(r) == 1
    else:
        assert_problem(r, 400, "object")


def test_head_counter(server):
    r = requests.head(f"{server.url}/api/v1/counter/{uid('o')}")
    assert r.status_code in (200, 405), r.status_code


def test_many_idle_connections(server):
    """Hundreds of open idle connections do not keep others from being served."""
    u = urlsplit(server.url)
    socks = []
    try:
        for _ in range(300):
            socks.append(socket.create_connection((u.hostname, u.port), timeout=10))
        obj = uid("obj")
        t0 = time.monotonic()
        assert server.add(obj, "t") == 1
        assert time.monotonic() - t0 < 5
    finally:
        for s in socks:
            s.close()
    assert requests.get(f"{server.url}/healthz").status_code == 200


def test_http10_without_host(server):
    obj = uid("obj")
    server.add(obj, "t")
    u = urlsplit(server.url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(f"GET /api/v1/counter/{obj} HTTP/1.0\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status, _, body = parse_response(data)
    assert status == 200 and body.strip() == b"1", data[:300]


GARBAGE = {
    "not-http": b"GARBAGE\r\n\r\n",
    "method-only": b"GET\r\n\r\n",
    "negative-length": b"PUT /api/v1/counter/x HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
    "bad-length": b"PUT /api/v1/counter/x HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    "bad-chunk": b"PUT /api/v1/counter/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "100k-path": b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "200k-header": b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"b" * 200000 + b"\r\n\r\n",
    "tls-hello": b"\x00\xff\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" * 10,
}


@pytest.mark.parametrize("garbage", list(GARBAGE.values()), ids=list(GARBAGE.keys()))
def test_garbage_requests_do_not_hurt(server, garbage):
    u = urlsplit(server.url)
    with socket.create_connection((u.hostname, u.port), timeout=5) as s:
        data = b""
        try:
            s.sendall(garbage)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server stopped reading (too long): fine, if it stays healthy
        try:
            data = s.recv(65536)
        except OSError:
            pass
    if data.startswith(b"HTTP/"):
        status = int(data[9:12])
        assert 400 <= status < 500, f"garbage answered with {status}: {data[:300]!r}"
    r = requests.get(f"{server.url}/healthz", timeout=10)
    assert r.status_code == 200


def test_slow_client_does_not_block_others(server):
    """A connection that sends half a request must not stall other clients."""
    u = urlsplit(server.url)
    socks = []
    try:
        for _ in range(8):
            s = socket.create_connection((u.hostname, u.port), timeout=10)
            s.sendall(b"PUT /api/v1/counter/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
            socks.append(s)
        t0 = time.monotonic()
        obj = uid("obj")
        for i in range(20):
            assert server.add(obj, f"t{i}") == i + 1
        assert time.monotonic() - t0 < 5, "requests were stalled by incomplete ones"
    finally:
        for s in socks:
            s.close()


# -- operations ------------------------------------------------------------------


def test_healthz(server):
    r = requests.get(f"{server.url}/healthz")
    assert r.status_code == 200, r.text


PROM_LINE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? '
                       r'[-+]?([0-9.]+([eE][-+]?[0-9]+)?|NaN|[-+]?Inf)( -?\d+)?$')


def metrics(server):
    r = requests.get(f"{server.url}/metrics")
    assert r.status_code == 200, r.text
    ct = r.headers.get("Content-Type", "")
    assert ct.startswith("text/plain"), f"/metrics Content-Type {ct!r}"
    return r.text


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$')


def metric_sum(text, name, **labels):
    """The sum of a metric's samples whose labels include these; None if it has none."""
    total, found = 0.0, False
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        lbl = m.group(2) or ""
        if all(f'{k}="{v}"' in lbl for k, v in labels.items()):
            total += float(m.group(3))
            found = True
    return total if found else None


def test_metrics_format(server):
    text = metrics(server)
    for line in text.splitlines():
        if not line or line.startswith("#"):
            if line.startswith("# TYPE"):
                assert re.match(r"^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped)$",
                                line), line
            continue
        assert PROM_LINE.match(line), f"not a Prometheus sample line: {line!r}"
    assert "herald_http_requests_total{" in text
    assert "# TYPE herald_http_requests_total counter" in text


def test_metrics_count_requests_and_store_ops(server):
    obj = uid("obj")
    server.add(obj, "t")
    before = metrics(server)
    n0 = metric_sum(before, "herald_http_requests_total") or 0
    for i in range(10):
        server.add(obj, f"t{i}")
    after = metrics(server)
    n1 = metric_sum(after, "herald_http_requests_total")
    assert n1 is not None and n1 >= n0 + 10, f"herald_http_requests_total went {n0} -> {n1} after 10 PUTs"
    assert (metric_sum(after, "herald_http_requests_total", status="200") or 0) >= 10, \
        "herald_http_requests_total has no status=\"200\" samples"
    assert "herald_store_ops_total{" in after, "no herald_store_ops_total in /metrics"
    d0 = metric_sum(before, "herald_store_ops_total", op="dadd")
    d1 = metric_sum(after, "herald_store_ops_total", op="dadd")
    assert d0 is not None and d1 is not None, 'no herald_store_ops_total{op="dadd"} in /metrics'
    assert d1 >= d0 + 10, f'herald_store_ops_total{{op="dadd"}} went {d0} -> {d1} after 10 PUTs'
    # Latency histograms (API.md "Operations").
    assert re.search(r'^herald_http_request_duration_seconds_bucket\{[^\n]*le="\+Inf"\} \d+', after, re.M), \
        "no latency histogram (herald_http_request_duration_seconds_bucket{le=\"+Inf\"})"
    assert "herald_http_request_duration_seconds_count{" in after
    # 4xx answers are counted by status too.
    requests.get(f"{server.url}/api/v1/counter/bad!id")
    text = metrics(server)
    assert (metric_sum(text, "herald_http_requests_total", status="400") or 0) >= 1, \
        "a 400 answer is not in herald_http_requests_total"


def test_metrics_show_the_store_caches(herald, backend):
    """RocksDB reports each cache's share of `memory` and what it holds; a cache turned off
    in the store URI gets none. Redis Cluster keeps no caches of herald's."""
    tuned = {"data_dir": f"{herald.tmp_path / uid('data')}?off=chunks"} if backend == "rocksdb" else {}
    h = herald.start(backend, "--set", "memory=100m", **tuned)
    obj = uid("obj")
    h.add(obj, "t")
    assert h.count(obj) == 1
    text = metrics(h)
    if backend != "rocksdb":
        assert "herald_store_cache_bytes" not in text
        return
    budget = {c: metric_sum(text, "herald_store_cache_budget_bytes", cache=c)
              for c in ("blocks", "meta", "chunks", "zsets", "images", "rankings")}
    assert budget["chunks"] == 0, budget
    assert budget["blocks"] == 100 * MIB // 100 * 12, budget
    assert sum(budget.values()) <= 100 * MIB
    assert metric_sum(text, "herald_store_cache_bytes", cache="chunks") == 0
    assert metric_sum(text, "herald_store_cache_bytes", cache="blocks") is not None


def test_body_limits_follow_the_content_settings(herald, backend):
    """A story's content and an activity's data may be set past the server's 1 MiB body
    default: their routes then take bodies that large, and refuse (413) past the setting."""
    h = herald.start(backend, "--set", "story_content_max=3m", "--set", "activity_data_max=2m")
    content = "c" * (int(2.5 * MIB))
    r = requests.post(f"{h.url}/api/v1/stories", json={"url": f"https://big.example/{uid('s')}",
                                                        "content": content}, timeout=60)
    assert r.status_code == 201, r.text[:300]
    assert requests.get(f"{h.url}/api/v1/stories/{r.json()['id']}", timeout=60).json()["content"] == content
    r = requests.post(f"{h.url}/api/v1/stories", json={"url": f"https://big.example/{uid('s')}",
                                                        "content": "c" * (3 * MIB + 1)}, timeout=60)
    assert_problem(r, 413, "content")
    actor = uid("a")
    data = {"blob": "d" * int(1.5 * MIB)}
    r = requests.post(f"{h.url}/api/v1/activities", json={"actor": actor, "verb": "post", "data": data},
                      timeout=60)
    assert r.status_code == 201, r.text[:300]
    page = requests.get(f"{h.url}/api/v1/users/{actor}/feed", timeout=60).json()
    assert page["activities"][0]["data"] == data
    r = requests.post(f"{h.url}/api/v1/activities",
                      json={"actor": actor, "verb": "post", "data": {"blob": "d" * (2 * MIB + 1)}}, timeout=60)
    assert_problem(r, 413, "data")
