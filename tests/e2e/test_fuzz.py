"""Random requests against every route: a seeded fuzz loop over the whole API.

Each request picks a route of `src/api/routes.c` (or a method it does not take), fills its
path with identifiers good and bad, adds random query parameters, and sends a body that is
often nearly right (the route's own fields with values of every type and size) and
sometimes garbage (truncated or deeply nested JSON, invalid UTF-8, binary). Every answer
must be 2xx or 4xx, never 5xx; every 4xx must be an RFC 9457 problem with a detail; and the
server, the sanitizer build under `make test`, must stay up and exit clean afterwards.

FUZZ_REQUESTS (default 1500 per backend) sets the length and FUZZ_SEED the seed, so a
failure reproduces: the assertion message carries the request.
"""

import json
import os
import random

import requests

from conftest import uid

T = 30

# (method, path template, body kind) for every route; body kinds name the fields below.
ROUTES = [
    ("PUT", "/api/v1/counter/{id}", "token"),
    ("GET", "/api/v1/counter/{id}", None),
    ("PUT", "/api/v1/counters/{id}/{id}", "token"),
    ("GET", "/api/v1/counters/{id}/{id}", None),
    ("POST", "/api/v1/counters/{id}/counts", "counts"),
    ("PUT", "/api/v1/counters/{id}", "counter_settings"),
    ("GET", "/api/v1/counters/{id}", None),
    ("PUT", "/api/v1/members/{id}", "member"),
    ("GET", "/api/v1/members/{id}", None),
    ("POST", "/api/v1/stories", "story"),
    ("POST", "/api/v1/stories/{story}/urls", "story_url"),
    ("GET", "/api/v1/stories/{story}", None),
    ("GET", "/api/v1/stories", None),
    ("GET", "/api/v1/stories/recent", None),
    ("PUT", "/api/v1/ratings/{id}/{story}", "rating"),
    ("GET", "/api/v1/ratings/{id}/{story}", None),
    ("GET", "/api/v1/ratings/{id}", None),
    ("GET", "/api/v1/stories/{story}/ratings", None),
    ("GET", "/api/v1/ratings", None),
    ("GET", "/api/v1/members/{id}/top-rated", None),
    ("GET", "/api/v1/members/{id}/unseen", None),
    ("PUT", "/api/v1/users/{id}/follows/{id}", None),
    ("DELETE", "/api/v1/users/{id}/follows/{id}", None),
    ("GET", "/api/v1/users/{id}/follows", None),
    ("GET", "/api/v1/users/{id}/followers", None),
    ("GET", "/api/v1/users/{id}/friends", None),
    ("PUT", "/api/v1/groups/{id}/members/{id}", None),
    ("DELETE", "/api/v1/groups/{id}/members/{id}", None),
    ("GET", "/api/v1/groups/{id}/members", None),
    ("GET", "/api/v1/users/{id}/groups", None),
    ("POST", "/api/v1/activities", "activity"),
    ("GET", "/api/v1/activities", None),
    ("GET", "/api/v1/activities/{activity}", None),
    ("PUT", "/api/v1/activities/{activity}", "activity_update"),
    ("DELETE", "/api/v1/activities/{activity}", None),
    ("GET", "/api/v1/users/{id}/feed", None),
    ("GET", "/api/v1/users/{id}/timeline", None),
    ("GET", "/api/v1/groups/{id}/feed", None),
    ("PUT", "/api/v1/reading/sites/{domain}", None),
    ("DELETE", "/api/v1/reading/sites/{domain}", None),
    ("GET", "/api/v1/reading/sites", None),
    ("PUT", "/api/v1/users/{id}/reading", "share"),
    ("GET", "/api/v1/users/{id}/reading", None),
    ("POST", "/api/v1/users/{id}/reads", "read"),
    ("POST", "/api/v1/users/{id}/friends-reads", "friends_reads"),
    ("GET", "/api/v1/reading/popular", None),
    ("GET", "/api/v1/reading/trending", None),
    ("GET", "/api/v1/users/{id}/friends-popular", None),
    ("GET", "/healthz", None),
    ("GET", "/metrics", None),
]

FIELDS = {
    "counts": ["objects"],
    "counter_settings": ["ttl_ms", "exact_limit"],
    "member": ["url", "score"],
    "story": ["url", "content", "time"],
    "story_url": ["url", "preferred"],
    "rating": ["score", "time"],
    "activity": ["actor", "verb", "object", "target", "foreign_id", "time", "data"],
    "activity_update": ["object", "data"],
    "share": ["share"],
    "read": ["url", "time"],
    "friends_reads": ["urls"],
}

QUERY_KEYS = ["limit", "cursor", "since", "before", "after", "offset", "window", "rank", "url", "actor",
              "verb", "object", "target"]

QUERY_VALUES = ["", "0", "1", "-1", "20", "1000", "1001", "99999999999999999999", "abc", "1e3", "nan",
                "1.5", "1h", "1d", "7d", "2y", "top", "hot", "x.y", "1.2.3", "123.abc.9", "%00", "%ff",
                "https://example.com/a", "http://", "u1"]

IDS = ["u1", "u2", "alice", "a.b-c_d:e@f~g", "x" * 128, "x" * 129, "", "%00", "%2F", "..", "a%20b",
       "caf%C3%A9", "%ff", "%7Bx%7D", "y" * 3000, "-1", "0", "0000000000000000", "ffffffffffffffff",
       "group:g1"]

URLS = ["https://example.com/a", "http://www.example.com/a/", "HTTPS://EXAMPLE.COM/a/index.html",
        "https://example.com/a?utm_source=x#frag", "ftp://example.com/", "not a url", "", "https://",
        "https://" + "h" * 300 + ".com/", "https://example.com/" + "p" * 5000, "https://[::1]:99999/",
        "https://ex ample.com/", "https://例え.jp/パス", "javascript:alert(1)"]


def any_value(rng, depth=0):
    """A JSON value of any type, size and nesting."""
    kinds = ["int", "big", "float", "str", "long", "bool", "null", "url"]
    if depth < 3:
        kinds += ["list", "obj"]
    k = rng.choice(kinds)
    if k == "int":
        return rng.choice([0, 1, -1, 2, 60000, 86400000, 1700000000000, -1700000000000])
    if k == "big":
        return rng.choice([2 ** 53 + 1, 2 ** 63, -2 ** 63 - 1, 10 ** 30, 1e300, -1e300])
    if k == "float":
        return rng.choice([0.5, -0.0, 1e-300, 3.14159])
    if k == "str":
        return rng.choice(["", "x", "u1", "a b", "\u00e9", "\u0000", "\ud83d\ude00", "{}", "1"])
    if k == "long":
        return "z" * rng.choice([129, 300, 5000, 70000])
    if k == "bool":
        return rng.random() < 0.5
    if k == "null":
        return None
    if k == "url":
        return rng.choice(URLS)
    if k == "list":
        return [any_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 5, 101]))]
    return {rng.choice(["a", "url", "score", ""]): any_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def good_value(rng, field, ctx):
    """A value the field would accept, most of the time."""
    return {
        "objects": [rng.choice(IDS[:4]) for _ in range(rng.randint(0, 3))],
        "ttl_ms": rng.choice([60000, 86400000]),
        "exact_limit": rng.choice([1, 100, 10000]),
        "url": rng.choice(URLS[:4]),
        "score": rng.choice([-1, 0, 1]),
        "content": "<p>x</p>",
        "time": 1700000000000 + rng.randint(0, 10 ** 9),
        "preferred": rng.random() < 0.5,
        "actor": rng.choice(IDS[:4]),
        "verb": rng.choice(["post", "like"]),
        "object": rng.choice(["object:1", "o2"]),
        "target": rng.choice(["group:g1", "t"]),
        "foreign_id": uid("f"),
        "data": {"text": "hi"},
        "share": rng.random() < 0.5,
        "urls": [rng.choice(URLS[:4]) for _ in range(rng.randint(0, 3))],
    }[field]


def body_for(rng, kind, ctx):
    """(bytes, content type) for a route's body kind: near-valid JSON mostly, garbage sometimes."""
    r = rng.random()
    if r < 0.12:
        garbage = [b"", b"{", b'{"url": ', b"[]", b"null", b"42", b'"str"', b"\xff\xfe\x00garbage",
                   b"[" * 5000 + b"]" * 5000, b'{"a": ' * 3000 + b"1" + b"}" * 3000,
                   b'{"url": "\xc3\x28"}', b'{"score": 1, "score": -1}', bytes(rng.randbytes(64))]
        return rng.choice(garbage), "application/json"
    if kind == "token":
        return rng.choice([b"tok", b"", b"t" * 256, b"t" * 257, "é".encode(), b"\x00\x01"]), "text/plain"
    if kind is None:
        return (b"", None) if r < 0.8 else (json.dumps({"x": 1}).encode(), "application/json")
    obj = {}
    all_good = rng.random() < 0.3  # deep enough to write, and to reach the paths after it
    for f in FIELDS[kind]:
        p = 0 if all_good else rng.random()
        if p < 0.6:
            obj[f] = good_value(rng, f, ctx)
        elif p < 0.85:
            obj[f] = any_value(rng)
    if rng.random() < 0.1:
        obj[rng.choice(["unknown", "id", "__proto__"])] = any_value(rng)
    return json.dumps(obj).encode(), "application/json"


def fill(rng, template, ctx):
    path = template
    for name, pool in (("{id}", IDS), ("{story}", ctx["stories"] + IDS), ("{activity}", ctx["activities"] + IDS),
                       ("{domain}", ["example.com", "EXAMPLE.com", "", "a..b", "x" * 300, "%00", "ex ample"])):
        while name in path:
            path = path.replace(name, rng.choice(pool) or "", 1)
    if rng.random() < 0.5:
        q = [f"{k}={rng.choice(QUERY_VALUES)}" for k in rng.sample(QUERY_KEYS, rng.randint(1, 3))]
        path += "?" + "&".join(q)
    return path


def test_random_requests_are_answered_2xx_or_4xx(herald, backend):
    h = herald.start(backend)
    seed = int(os.environ.get("FUZZ_SEED", "20261126"))
    n = int(os.environ.get("FUZZ_REQUESTS", "1500"))
    rng = random.Random(seed)
    s = requests.Session()
    # A few things that exist, so that requests reach past "not found".
    ctx = {"stories": [], "activities": []}
    for i in range(3):
        r = s.post(f"{h.url}/api/v1/stories", json={"url": f"https://example.com/{uid('f')}/{i}"}, timeout=T)
        assert r.status_code == 201, r.text
        ctx["stories"].append(r.json()["id"])
        r = s.post(f"{h.url}/api/v1/activities", json={"actor": "u1", "verb": "post", "object": f"o{i}",
                                                        "target": "group:g1"}, timeout=T)
        assert r.status_code == 201, r.text
        ctx["activities"].append(r.json()["id"])
    statuses = {}
    for i in range(n):
        method, template, kind = rng.choice(ROUTES)
        if rng.random() < 0.05:
            method = rng.choice(["GET", "PUT", "POST", "DELETE", "PATCH"])
        path = fill(rng, template, ctx)
        body, ctype = body_for(rng, kind, ctx)
        headers = {"Content-Type": ctype} if ctype else {}
        what = f"request {i} (seed {seed}): {method} {path[:300]} body {body[:300]!r}"
        try:
            r = s.request(method, h.url + path, data=body, headers=headers, timeout=T)
        except requests.exceptions.ConnectionError as e:
            assert h.alive(), f"the server died at {what}: {e}\n{h.stderr()[-3000:]}"
            s = requests.Session()  # the server closed this connection (an answer it may give): go on
            continue
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        if r.status_code == 201 and template in ("/api/v1/stories", "/api/v1/activities"):
            ctx["stories" if "stories" in template else "activities"].append(r.json()["id"])
        assert r.status_code < 500, f"{r.status_code} at {what}: {r.text[:500]}"
        if r.status_code >= 400:
            p = r.json()
            assert p.get("status") == r.status_code and p.get("detail"), f"not a problem with a detail at {what}: {p}"
    print(f"fuzz {backend}: {n} requests, statuses {dict(sorted(statuses.items()))}")
    assert h.alive()
    assert sum(v for k, v in statuses.items() if k < 300) > n // 10, f"too few requests got through: {statuses}"
    h.stop(check=True)  # no sanitizer report, exit 0
