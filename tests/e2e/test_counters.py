"""Unique counters (API.md "Unique counters"; seed: Yandex unique user action counting).

Every test runs on both backends through the session `server` fixture and uses unique
object and counter names.
"""

import random
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import assert_problem, counter_path, parse_count, uid

DEFAULT_TTL_MS = 30 * 24 * 3600 * 1000
DEFAULT_EXACT_LIMIT = 10000


# -- the seed's commands -------------------------------------------------------


def curl(*args):
    if not shutil.which("curl"):
        pytest.fail("curl is not installed (scripts/deps.sh installs it)", pytrace=False)
    return subprocess.run(["curl", *args], capture_output=True, text=True, timeout=30)


def test_seed_curl_commands(server):
    """`curl -X PUT -d token http://HOST/api/v1/counter/object_id` prints the new count,
    `curl http://HOST/api/v1/counter/object_id` prints the count."""
    obj = uid("object_id")
    url = f"{server.url}/api/v1/counter/{obj}"

    r = curl(url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", f"GET of an unknown object printed {r.stdout!r}"

    r = curl("-X", "PUT", "-d", "token", url)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1", f"first PUT printed {r.stdout!r}"

    r = curl("-X", "PUT", "-d", "token", url)
    assert r.stdout.strip() == "1", f"repeated PUT of the same token printed {r.stdout!r}"

    r = curl("-X", "PUT", "-d", "another-token", url)
    assert r.stdout.strip() == "2", f"PUT of a second token printed {r.stdout!r}"

    r = curl(url)
    assert r.stdout.strip() == "2", f"GET printed {r.stdout!r}"
    # Nothing but the number (and at most a newline) on stdout, as the seed shows.
    assert r.stdout in ("2", "2\n"), repr(r.stdout)


def test_seed_commands_with_requests(server):
    obj = uid("object_id")
    url = f"{server.url}/api/v1/counter/{obj}"
    r = requests.get(url)
    assert r.status_code == 200
    assert parse_count(r) == 0
    r = requests.put(url, data="token")
    assert r.status_code == 200
    assert parse_count(r) == 1
    # Form-encoded like curl -d sends it: the body is still the raw token.
    r = requests.put(url, data="token", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert parse_count(r) == 1
    r = requests.put(url, data=b"43", headers={"Content-Type": "text/plain"})
    assert parse_count(r) == 2
    assert server.count(obj) == 2


# -- counting ------------------------------------------------------------------


def test_distinct_under_repeats(server):
    obj = uid("obj")
    s = requests.Session()
    tokens = [f"user-{i}" for i in range(50)]
    expected = 0
    seen = set()
    for i in range(300):
        t = random.choice(tokens)
        if t not in seen:
            seen.add(t)
            expected += 1
        assert server.add(obj, t, session=s) == expected
    assert server.count(obj, session=s) == len(seen)


def test_put_returns_count_after_adding(server):
    obj = uid("obj")
    s = requests.Session()
    for i in range(1, 21):
        assert server.add(obj, f"tok{i}", session=s) == i
        assert server.count(obj, session=s) == i


def test_unknown_object_counts_zero(server):
    assert server.count(uid("never")) == 0
    assert server.count(uid("never"), counter=uid("nc")) == 0


def test_tokens_are_binary_safe(server):
    """The token is the raw body: bytes after a NUL, high bytes and spaces all count."""
    obj = uid("obj")
    s = requests.Session()
    toks = [b"\x00a", b"\x00b", b"\xff\xfe", b"a b", b"a+b", b"a%20b", b"A", b"a", b"a\r\nb",
            bytes(range(1, 200))]
    for i, t in enumerate(toks, 1):
        assert server.add(obj, t, session=s) == i, f"token {t!r} was not counted as new"
    for t in toks:
        assert server.add(obj, t, session=s) == len(toks), f"token {t!r} counted twice"


def test_token_length_bounds(server):
    obj = uid("obj")
    assert server.add(obj, b"x") == 1
    assert server.add(obj, b"y" * 256) == 2
    # Tokens differing only in the last of 256 bytes are distinct.
    assert server.add(obj, b"y" * 255 + b"z") == 3


def test_identifier_charset_and_length(server):
    s = requests.Session()
    for obj in ["A-Z_a.z:0@9~-" + uid(""), "x" * 128, "a", "~", "user@example.com:42"]:
        if len(obj) > 128:
            obj = obj[:128]
        before = server.count(obj, session=s)
        assert server.add(obj, uid("tok"), session=s) == before + 1, obj
    counter = "c" * 128
    obj = uid("obj")
    assert server.add(obj, "t", counter=counter, session=s) >= 1


def test_many_objects(server):
    s = requests.Session()
    prefix = uid("many")
    objs = [f"{prefix}-{i}" for i in range(120)]
    want = {}
    for i, o in enumerate(objs):
        n = i % 7 + 1
        for k in range(n):
            server.add(o, f"tok-{k}", session=s)
        want[o] = n
    got = server.counts("default", objs, session=s)
    assert got == want
    for o in random.sample(objs, 15):
        assert server.count(o, session=s) == want[o]


def test_same_token_different_objects(server):
    """A token counts once per object, independently on every object."""
    s = requests.Session()
    objs = [uid("o") for _ in range(5)]
    for o in objs:
        assert server.add(o, "same-user", session=s) == 1
    assert server.add(objs[0], "other", session=s) == 2
    assert [server.count(o, session=s) for o in objs] == [2, 1, 1, 1, 1]


# -- named counters ------------------------------------------------------------


def test_named_counters_isolated(server):
    s = requests.Session()
    obj = uid("obj")
    c1, c2 = uid("click"), uid("view")
    assert server.add(obj, "u1", counter=c1, session=s) == 1
    assert server.add(obj, "u2", counter=c1, session=s) == 2
    assert server.add(obj, "u1", counter=c2, session=s) == 1
    assert server.count(obj, counter=c1, session=s) == 2
    assert server.count(obj, counter=c2, session=s) == 1
    assert server.count(obj, session=s) == 0, "a named counter leaked into the default counter"
    assert server.add(obj, "u9", session=s) == 1
    assert server.count(obj, counter=c1, session=s) == 2
    assert server.count(obj, counter=uid("other"), session=s) == 0


def test_default_counter_is_named_default(server):
    s = requests.Session()
    obj = uid("obj")
    assert server.add(obj, "a", session=s) == 1
    assert server.count(obj, counter="default", session=s) == 1
    assert server.add(obj, "b", counter="default", session=s) == 2
    assert server.add(obj, "a", counter="default", session=s) == 2
    assert server.count(obj, session=s) == 2
    assert server.counts("default", [obj], session=s) == {obj: 2}


def test_object_and_counter_names_do_not_collide(server):
    """Key encodings must not let (counter, object) pairs run into each other."""
    s = requests.Session()
    base = uid("k")
    pairs = [(base, "a:b"), (f"{base}:a", "b"), (base, "a"), (f"{base}:", "a"), (base, ":a"),
             (f"{base}.", "a")]
    for i, (c, o) in enumerate(pairs):
        assert server.add(o, f"t{i}", counter=c, session=s) == 1, (c, o)
    for c, o in pairs:
        assert server.count(o, counter=c, session=s) == 1, (c, o)


# -- batch counts --------------------------------------------------------------


def test_batch_counts(server):
    s = requests.Session()
    counter = uid("cnt")
    a, b, c = uid("a"), uid("b"), uid("c")
    for t in ["x", "y", "z", "x"]:
        server.add(a, t, counter=counter, session=s)
    server.add(c, "x", counter=counter, session=s)
    r = s.post(f"{server.url}/api/v1/counters/{counter}/counts", json={"objects": [a, b, c]})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.json() == {"counts": {a: 3, b: 0, c: 1}}
    # The default counter does not see them.
    assert server.counts("default", [a, b, c], session=s) == {a: 0, b: 0, c: 0}


def test_batch_counts_limits(server):
    s = requests.Session()
    counter = uid("cnt")
    objs = [f"o{i}" for i in range(1000)]
    got = server.counts(counter, objs, session=s)
    assert len(got) == 1000 and all(v == 0 for v in got.values())
    one = server.counts(counter, ["only"], session=s)
    assert one == {"only": 0}


def test_batch_counts_duplicates(server):
    s = requests.Session()
    counter = uid("cnt")
    a = uid("a")
    server.add(a, "t", counter=counter, session=s)
    r = s.post(f"{server.url}/api/v1/counters/{counter}/counts", json={"objects": [a, a]})
    # Either a 400 (duplicates rejected) or the count once; never a 5xx.
    assert r.status_code in (200, 400), r.text
    if r.status_code == 200:
        assert r.json() == {"counts": {a: 1}}


# -- settings ------------------------------------------------------------------


def assert_settings(got, counter, ttl_ms, exact_limit):
    want = {"counter": counter, "ttl_ms": ttl_ms, "exact_limit": exact_limit}
    assert {k: got.get(k) for k in want} == want, f"settings: got {got}, expected {want}"


def test_settings_defaults(server):
    c = uid("cnt")
    r = requests.get(f"{server.url}/api/v1/counters/{c}")
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert_settings(r.json(), c, DEFAULT_TTL_MS, DEFAULT_EXACT_LIMIT)


def test_settings_roundtrip(server):
    c = uid("cnt")
    got = server.set_counter(c, ttl_ms=5000, exact_limit=77)
    assert_settings(got, c, 5000, 77)
    assert_settings(server.get_counter(c), c, 5000, 77)
    # Another counter keeps the defaults.
    other = uid("cnt")
    assert_settings(server.get_counter(other), other, DEFAULT_TTL_MS, DEFAULT_EXACT_LIMIT)
    # Bounds.
    assert server.set_counter(c, exact_limit=1)["exact_limit"] == 1
    assert server.set_counter(c, exact_limit=1000000)["exact_limit"] == 1000000


def test_settings_one_field(server):
    c = uid("cnt")
    got = server.set_counter(c, ttl_ms=60000)
    assert got["counter"] == c and got["ttl_ms"] == 60000
    assert got["exact_limit"] == DEFAULT_EXACT_LIMIT
    c2 = uid("cnt")
    got = server.set_counter(c2, exact_limit=5)
    assert got["exact_limit"] == 5 and got["ttl_ms"] == DEFAULT_TTL_MS


def test_exact_up_to_limit(server):
    s = requests.Session()
    c = uid("cnt")
    server.set_counter(c, exact_limit=50)
    obj = uid("obj")
    for i in range(1, 51):
        assert server.add(obj, f"t{i}", counter=c, session=s) == i
    assert server.count(obj, counter=c, session=s) == 50


def test_exact_limit_one(server):
    s = requests.Session()
    c = uid("one")
    server.set_counter(c, exact_limit=1)
    obj = uid("obj")
    assert server.add(obj, "t0", counter=c, session=s) == 1
    for i in range(1, 10):
        n = server.add(obj, f"t{i}", counter=c, session=s)
    assert 9 <= server.count(obj, counter=c, session=s) <= 11


# -- TTL -----------------------------------------------------------------------


@pytest.mark.parametrize("ttl_ms", [1000 * 3600 * 24 * 365 * 100, 2 ** 53, 2 ** 61 - 1])
def test_huge_ttl(server, ttl_ms):
    """Expiry arithmetic must not overflow: a huge ttl is either refused (400) or works."""
    c = uid("bigttl")
    r = requests.put(f"{server.url}/api/v1/counters/{c}", json={"ttl_ms": ttl_ms})
    if r.status_code == 400:
        assert_problem(r, 400, "ttl_ms")
        return
    assert r.status_code == 200, r.text
    assert r.json()["ttl_ms"] == ttl_ms
    obj = uid("obj")
    assert server.add(obj, "t1", counter=c) == 1
    assert server.add(obj, "t2", counter=c) == 2
    assert server.count(obj, counter=c) == 2


def test_ttl_expiry(server):
    s = requests.Session()
    c = uid("ttl")
    assert server.set_counter(c, ttl_ms=1000)["ttl_ms"] == 1000
    obj = uid("obj")
    assert server.add(obj, "t1", counter=c, session=s) == 1
    assert server.add(obj, "t2", counter=c, session=s) == 2
    time.sleep(1.5)
    assert server.count(obj, counter=c, session=s) == 0, "connections outlived the counter's ttl"
    assert server.counts(c, [obj], session=s) == {obj: 0}
    assert server.add(obj, "t1", counter=c, session=s) == 1, "an expired token still counted on re-PUT"
    assert server.count(obj, counter=c, session=s) == 1


def test_ttl_refreshed_by_put(server):
    """A connection expires ttl after its LAST put."""
    s = requests.Session()
    c = uid("ttl")
    server.set_counter(c, ttl_ms=2000)
    obj = uid("obj")
    t0 = time.monotonic()
    assert server.add(obj, "t1", counter=c, session=s) == 1
    time.sleep(max(0, 1.2 - (time.monotonic() - t0)))
    assert server.add(obj, "t1", counter=c, session=s) == 1   # refresh t1
    assert server.add(obj, "t2", counter=c, session=s) == 2
    time.sleep(max(0, 2.6 - (time.monotonic() - t0)))
    # t1's first PUT is 2.6 s old, its last 1.4 s: it still counts.
    assert server.count(obj, counter=c, session=s) == 2, "a re-PUT did not refresh the token's expiry"
    time.sleep(max(0, 4.3 - (time.monotonic() - t0)))
    assert server.count(obj, counter=c, session=s) == 0


# -- estimate past the exact limit ----------------------------------------------


def _parallel_puts(server, counter, obj, tokens, threads=4):
    results = []
    lock = threading.Lock()
    chunks = [tokens[i::threads] for i in range(threads)]

    def work(chunk):
        s = requests.Session()
        out = []
        for t in chunk:
            r = server.put_counter(obj, t, counter, session=s)
            assert r.status_code == 200, f"PUT {t}: {r.status_code} {r.text}"
            out.append(parse_count(r))
        with lock:
            results.extend(out)

    with ThreadPoolExecutor(threads) as ex:
        for f in [ex.submit(work, ch) for ch in chunks]:
            f.result()
    return results


def test_estimate_past_exact_limit(server):
    c = uid("hll")
    server.set_counter(c, exact_limit=100)
    obj = uid("hot")
    s = requests.Session()
    for i in range(1, 101):
        assert server.add(obj, f"user-{i}", counter=c, session=s) == i
    tokens = [f"user-{i}" for i in range(101, 3001)]
    _parallel_puts(server, c, obj, tokens)
    n = server.count(obj, counter=c, session=s)
    assert n > 100, f"the count is capped at the exact limit: {n}"
    assert abs(n - 3000) <= 90, f"estimate {n} is more than 3 % off 3000"
    # Re-adding known tokens (from before and after the switch) changes nothing:
    # a sketch is idempotent.
    _parallel_puts(server, c, obj, [f"user-{i}" for i in range(1, 3001, 7)])
    n2 = server.count(obj, counter=c, session=s)
    assert n2 == n, f"re-adding known tokens moved the estimate from {n} to {n2}"
    assert server.counts(c, [obj], session=s) == {obj: n2}


def test_no_drop_when_switching_to_the_sketch(server):
    """The tokens counted exactly are carried into the sketch: just past the limit the
    count goes on from the limit, it does not fall back."""
    s = requests.Session()
    c = uid("switch")
    server.set_counter(c, exact_limit=100)
    obj = uid("obj")
    for i in range(1, 101):
        assert server.add(obj, f"u{i}", counter=c, session=s) == i
    for i in range(101, 131):
        n = server.add(obj, f"u{i}", counter=c, session=s)
        assert abs(n - i) <= max(3, 0.03 * i), f"after {i} distinct tokens (limit 100) the count is {n}"
    n = server.count(obj, counter=c, session=s)
    assert server.add(obj, "u5", counter=c, session=s) == n, "a token counted exactly was new to the sketch"


def test_default_counter_settings_apply_to_seed_endpoint(herald):
    """/api/v1/counter/{object} is the counter named "default", settings included
    (a dedicated server: the shared ones must keep default settings)."""
    h = herald.start("rocksdb")
    h.set_counter("default", ttl_ms=1000)
    obj = uid("obj")
    assert h.add(obj, "t") == 1
    time.sleep(1.5)
    assert h.count(obj) == 0


def test_sketch_expires_ttl_after_last_put(server):
    """Past the exact limit the object's connections still expire: a sketch whose
    tokens were all last PUT more than ttl ago counts 0, not its old estimate.

    A sketch cannot forget one token, so expiry there is per time bucket: a token
    counts from its PUT until the end of its bucket plus ttl, never less than ttl
    and at most one bucket width (max(1 s, ttl / 16)) more."""
    s = requests.Session()
    c = uid("hllttl")
    server.set_counter(c, exact_limit=10, ttl_ms=1500)
    obj = uid("obj")
    for i in range(60):
        server.add(obj, f"t{i}", counter=c, session=s)
    last = time.monotonic()
    n = server.count(obj, counter=c, session=s)
    assert 55 <= n <= 65, n
    time.sleep(max(0, last + 1.2 - time.monotonic()))
    n = server.count(obj, counter=c, session=s)
    assert 55 <= n <= 65, f"the sketch expired before ttl: {n} at 1.2 s with ttl 1.5 s"
    time.sleep(max(0, last + 1.5 + 1.0 + 0.3 - time.monotonic()))
    assert server.count(obj, counter=c, session=s) == 0, "an estimated object outlived ttl + one bucket"
    assert server.add(obj, "fresh", counter=c, session=s) == 1


def test_batch_counts_mixes_exact_and_estimated(server):
    s = requests.Session()
    c = uid("mix")
    server.set_counter(c, exact_limit=20)
    small, big, none = uid("small"), uid("big"), uid("none")
    for i in range(7):
        server.add(small, f"t{i}", counter=c, session=s)
    _parallel_puts(server, c, big, [f"t{i}" for i in range(500)])
    got = server.counts(c, [small, big, none], session=s)
    assert got[small] == 7 and got[none] == 0, got
    assert abs(got[big] - 500) <= 25, got
    assert got[big] == server.count(big, counter=c, session=s)


# -- concurrency ---------------------------------------------------------------


def test_concurrent_crossing_the_exact_limit(server):
    """8 writers PUT the same 300 tokens while the object crosses exact_limit=100:
    the switch to the sketch must neither lose tokens nor count them 8 times."""
    c = uid("cross")
    server.set_counter(c, exact_limit=100)
    obj = uid("o")
    tokens = [f"t{i}" for i in range(300)]
    barrier = threading.Barrier(8)

    def work(k):
        s = requests.Session()
        mine = list(tokens)
        random.Random(k).shuffle(mine)
        barrier.wait()
        for t in mine:
            r = server.put_counter(obj, t, c, session=s)
            assert r.status_code == 200, r.text

    with ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(work, k) for k in range(8)]:
            f.result()
    n = server.count(obj, counter=c)
    assert abs(n - 300) <= 15, f"300 distinct tokens (8 concurrent writers, limit 100) counted as {n}"


def test_concurrent_same_tokens_never_double_count(server):
    c = uid("conc")
    objs = [uid("o") for _ in range(3)]
    tokens = [f"t{i}" for i in range(60)]
    counts_seen = {o: [] for o in objs}
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def work(k):
        s = requests.Session()
        rnd = random.Random(k)
        mine = [(o, t) for o in objs for t in tokens]
        rnd.shuffle(mine)
        barrier.wait()
        out = []
        for o, t in mine:
            r = server.put_counter(o, t, c, session=s)
            assert r.status_code == 200, r.text
            out.append((o, parse_count(r)))
        with lock:
            for o, n in out:
                counts_seen[o].append(n)

    with ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(work, k) for k in range(8)]:
            f.result()
    for o in objs:
        assert server.count(o, counter=c) == len(tokens), f"{o}: double counted under concurrency"
        assert max(counts_seen[o]) == len(tokens)
        assert min(counts_seen[o]) >= 1
    assert server.counts(c, objs) == {o: len(tokens) for o in objs}


def test_concurrent_distinct_tokens_all_counted(server):
    """8 writers, disjoint tokens, one object: every token counts once, none lost."""
    c = uid("conc")
    obj = uid("o")
    per = 40

    def work(k):
        s = requests.Session()
        for i in range(per):
            r = server.put_counter(obj, f"w{k}-{i}", c, session=s)
            assert r.status_code == 200, r.text

    with ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(work, k) for k in range(8)]:
            f.result()
    assert server.count(obj, counter=c) == 8 * per


def test_two_servers_on_one_redis_cluster_count_alike(herald):
    """Two servers on one Redis Cluster, 8 writers split between them, PUT the same tokens
    at once: one object stays exact (60 tokens), one crosses exact_limit=100 into the
    sketch (300 tokens); both servers answer the same counts, none double counted."""
    a, b = herald.start("redis"), herald.start("redis")
    c = uid("two")
    a.set_counter(c, exact_limit=100)
    exact, crossing = uid("exact"), uid("cross")
    work_items = [(exact, f"t{i}") for i in range(60)] + [(crossing, f"t{i}") for i in range(300)]
    barrier = threading.Barrier(8)

    def work(k):
        h, s = (a, b)[k % 2], requests.Session()
        mine = list(work_items)
        random.Random(k).shuffle(mine)
        barrier.wait()
        for o, t in mine:
            r = h.put_counter(o, t, c, session=s)
            assert r.status_code == 200, r.text

    with ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(work, k) for k in range(8)]:
            f.result()
    for h in (a, b):
        assert h.count(exact, counter=c) == 60, f"{h}: double counted across servers"
        n = h.count(crossing, counter=c)
        assert abs(n - 300) <= 15, f"{h}: 300 distinct tokens counted as {n}"
    assert a.count(crossing, counter=c) == b.count(crossing, counter=c)
