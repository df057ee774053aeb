"""Activities and feeds (API.md "Activities and feeds"; seeds 001 and 004): create /
read / update / delete, the user's own feed, group feeds, the home timeline with its
asynchronous, durable fan-out (backfill on follow and join, removal on unfollow and
leave), the hybrid merge of big accounts, trimming, TTL, secondary-index queries, and
fan-out finishing after kill -9 mid-way.

Fan-out is asynchronous, so timeline checks poll (eventually(...)); reads of the
actor's own feed, group feeds and deletes are synchronous and checked at once."""

import re
import threading
import time

import pytest
import requests

from conftest import assert_problem, uid
from test_durability import restart_on_new_port

API = "/api/v1"
NOW = int(time.time() * 1000)


def eventually(check, timeout=20.0, every=0.05):
    """Poll check() until it returns a truthy value; fail with its last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"condition not met in {timeout}s; last value {last!r}")


def post(s, h, **fields):
    r = s.post(f"{h.url}{API}/activities", json=fields)
    assert r.status_code == 201, r.text
    return r.json()


def follow(s, h, a, b):
    r = s.put(f"{h.url}{API}/users/{a}/follows/{b}")
    assert r.status_code == 200, r.text


def join(s, h, g, u):
    r = s.put(f"{h.url}{API}/groups/{g}/members/{u}")
    assert r.status_code == 200, r.text


def page(s, url, **params):
    r = s.get(url, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def ids(body):
    return [a["id"] for a in body["activities"]]


def timeline(s, h, u, **params):
    return ids(page(s, f"{h.url}{API}/users/{u}/timeline", **params))


def feed(s, h, u, **params):
    return ids(page(s, f"{h.url}{API}/users/{u}/feed", **params))


def walk(s, url, limit, **params):
    """Every id of a feed, page by page by cursor."""
    out, cursor = [], None
    for _ in range(200):
        p = dict(params, limit=limit)
        if cursor:
            p["cursor"] = cursor
        body = page(s, url, **p)
        assert len(body["activities"]) <= limit
        out += ids(body)
        cursor = body.get("next_cursor")
        if not cursor:
            return out
    raise AssertionError("too many pages")


def metric(h, name):
    text = requests.get(f"{h.url}/metrics").text
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


# -- create, read, update, delete ---------------------------------------------


def test_create_get_and_fields(server):
    s = server.session()
    a = uid("u")
    body = {"actor": a, "verb": "new_discussion", "object": "thread:7369603", "target": "group:g1",
            "time": NOW - 5000, "foreign_id": "disc-99", "data": {"title": "hi", "n": [1, 2]}}
    r = s.post(f"{server.url}{API}/activities", json=body)
    assert r.status_code == 201, r.text
    got = r.json()
    assert re.fullmatch(r"[0-9a-f]{20}", got["id"])
    for k, v in body.items():
        assert got[k] == v
    r = s.get(f"{server.url}{API}/activities/{got['id']}")
    assert r.status_code == 200 and r.json() == got
    # absent fields are omitted, time defaults to now
    minimal = post(s, server, actor=a, verb="greeting")
    assert set(minimal) == {"id", "actor", "verb", "time"}
    assert abs(minimal["time"] - time.time() * 1000) < 60000


def test_strings_and_data_come_back_exactly(server):
    # Answers are written by herald's own JSON writer (src/api/json_out.c):
    # quotes, backslashes, control characters and non-ASCII text in data (the
    # other fields are identifiers), nested, must read back as they were sent.
    s = server.session()
    a = uid("u")
    tricky = 'q"b\\s/\n\r\t\b\f\x01\x1f caf\u00e9 \u65e5\u672c \U0001F600 end'
    body = {"actor": a, "verb": "post", "object": "o:1.x~y@z", "target": "group:g-1", "foreign_id": "f_1",
            "data": {"text": tricky, "nested": {"list": [1, -2.5, True, None, tricky]}, tricky: ""}}
    r = s.post(f"{server.url}{API}/activities", json=body)
    assert r.status_code == 201, r.text
    got = r.json()
    for k, v in body.items():
        assert got[k] == v, k
    assert s.get(f"{server.url}{API}/activities/{got['id']}").json() == got
    assert page(s, f"{server.url}{API}/users/{a}/feed")["activities"] == [got]


def test_foreign_id_makes_create_idempotent(server):
    s = server.session()
    a = uid("u")
    first = post(s, server, actor=a, verb="post", foreign_id="f-1", data={"v": 1})
    r = s.post(f"{server.url}{API}/activities", json={"actor": a, "verb": "post", "foreign_id": "f-1"})
    assert r.status_code == 200 and r.json()["duplicate"] is True and r.json()["id"] == first["id"]
    assert feed(s, server, a) == [first["id"]]
    # the same foreign_id of another actor is another activity
    other = post(s, server, actor=uid("v"), verb="post", foreign_id="f-1")
    assert other["id"] != first["id"]


def test_update_shows_everywhere_at_once(server):
    s = server.session()
    a, f = uid("a"), uid("f")
    follow(s, server, f, a)
    act = post(s, server, actor=a, verb="post", object=uid("o"), data={"v": 1})
    eventually(lambda: timeline(s, server, f) == [act["id"]])
    new_obj = uid("o2")
    r = s.put(f"{server.url}{API}/activities/{act['id']}", json={"data": {"v": 2}, "object": new_obj})
    assert r.status_code == 200 and r.json()["data"] == {"v": 2}, r.text
    tl = page(s, f"{server.url}{API}/users/{f}/timeline")["activities"]
    assert tl[0]["data"] == {"v": 2} and tl[0]["object"] == new_obj
    assert page(s, f"{server.url}{API}/users/{a}/feed")["activities"][0]["data"] == {"v": 2}
    # the object index moved with it
    assert ids(page(s, f"{server.url}{API}/activities", object=new_obj)) == [act["id"]]
    assert ids(page(s, f"{server.url}{API}/activities", object=act["object"])) == []


def test_delete_disappears_from_every_feed_at_once(server):
    s = server.session()
    a, f, g = uid("a"), uid("f"), uid("g")
    follow(s, server, f, a)
    join(s, server, g, f)
    keep = post(s, server, actor=a, verb="post", time=NOW - 2000)
    gone = post(s, server, actor=a, verb="post", target=f"group:{g}", time=NOW - 1000)
    eventually(lambda: timeline(s, server, f) == [gone["id"], keep["id"]])
    r = s.delete(f"{server.url}{API}/activities/{gone['id']}")
    assert r.status_code == 200, r.text
    assert timeline(s, server, f) == [keep["id"]]
    assert feed(s, server, a) == [keep["id"]]
    assert ids(page(s, f"{server.url}{API}/groups/{g}/feed")) == []
    assert ids(page(s, f"{server.url}{API}/activities", actor=a, verb="post")) == [keep["id"]]
    assert_problem(s.get(f"{server.url}{API}/activities/{gone['id']}"), 404)
    assert_problem(s.delete(f"{server.url}{API}/activities/{gone['id']}"), 404)


# -- feeds and paging ------------------------------------------------------------


def test_own_feed_newest_first_with_offset_and_windows(server):
    s = server.session()
    a = uid("a")
    made = [post(s, server, actor=a, verb="post", time=NOW - 10000 + i * 100)["id"] for i in range(10)]
    newest_first = made[::-1]
    url = f"{server.url}{API}/users/{a}/feed"
    assert ids(page(s, url, limit=100)) == newest_first
    assert ids(page(s, url, offset=2, limit=3)) == newest_first[2:5]
    # before / after are exclusive
    assert ids(page(s, url, before=NOW - 10000 + 500)) == made[:5][::-1]
    assert ids(page(s, url, after=NOW - 10000 + 500)) == made[6:][::-1]
    assert ids(page(s, url, after=NOW - 10000 + 200, before=NOW - 10000 + 500)) == made[3:5][::-1]
    assert walk(s, url, 3) == newest_first


def test_every_offset_on_every_feed(server):
    # seed 004's list_recent(a, b) is offset=a: each offset from 0 past the
    # end, on the own feed, the group feed, the timeline and a query
    s = server.session()
    a, me, g = uid("a"), uid("me"), uid("g")
    follow(s, server, me, a)
    join(s, server, g, me)
    made = [post(s, server, actor=a, verb="post", target=f"group:{g}", time=NOW - 9000 + i)["id"] for i in range(3)]
    newest_first = made[::-1]
    eventually(lambda: timeline(s, server, me) == newest_first)
    feeds = {
        "feed": (f"{server.url}{API}/users/{a}/feed", {}),
        "group": (f"{server.url}{API}/groups/{g}/feed", {}),
        "timeline": (f"{server.url}{API}/users/{me}/timeline", {}),
        "query": (f"{server.url}{API}/activities", {"actor": a}),
    }
    for name, (url, q) in feeds.items():
        for offset in range(5):
            for limit in (1, 2, 3, 10):
                got = ids(page(s, url, offset=offset, limit=limit, **q))
                assert got == newest_first[offset:offset + limit], (name, offset, limit)


def test_cursor_is_stable_while_new_activities_arrive(server):
    s = server.session()
    a = uid("a")
    made = [post(s, server, actor=a, verb="post", time=NOW - 100000 + i)["id"] for i in range(10)]
    url = f"{server.url}{API}/users/{a}/feed"
    first = page(s, url, limit=4)
    # newer activities arrive between pages
    for i in range(5):
        post(s, server, actor=a, verb="post", time=NOW + i)
    rest, cursor = [], first["next_cursor"]
    while cursor:
        body = page(s, url, limit=4, cursor=cursor)
        rest += ids(body)
        cursor = body.get("next_cursor")
    assert ids(first) + rest == made[::-1]


def test_group_feed_and_member_timelines(server):
    s = server.session()
    g, m1, m2, poster = uid("g"), uid("m1"), uid("m2"), uid("p")
    join(s, server, g, m1)
    join(s, server, g, m2)
    act = post(s, server, actor=poster, verb="rsvp", target=f"group:{g}")
    assert ids(page(s, f"{server.url}{API}/groups/{g}/feed")) == [act["id"]]
    for m in (m1, m2):
        eventually(lambda m=m: timeline(s, server, m) == [act["id"]])


def test_timeline_merges_follows_and_groups(server):
    s = server.session()
    me, x, y, g = uid("me"), uid("x"), uid("y"), uid("g")
    follow(s, server, me, x)
    follow(s, server, me, y)
    join(s, server, g, me)
    a1 = post(s, server, actor=x, verb="post", time=NOW - 3000)
    a2 = post(s, server, actor=uid("z"), verb="post", target=f"group:{g}", time=NOW - 2000)
    a3 = post(s, server, actor=y, verb="post", time=NOW - 1000)
    post(s, server, actor=uid("stranger"), verb="post", time=NOW - 500)
    want = [a3["id"], a2["id"], a1["id"]]
    eventually(lambda: timeline(s, server, me) == want)
    assert walk(s, f"{server.url}{API}/users/{me}/timeline", 1) == want


def test_follow_backfills_and_unfollow_removes(server):
    s = server.session()
    me, star, g = uid("me"), uid("star"), uid("g")
    old = [post(s, server, actor=star, verb="post", time=NOW - 5000 + i)["id"] for i in range(3)]
    follow(s, server, me, star)
    eventually(lambda: timeline(s, server, me) == old[::-1])
    # an activity of star in a group me is in stays after the unfollow
    join(s, server, g, me)
    in_group = post(s, server, actor=star, verb="post", target=f"group:{g}", time=NOW - 100)
    eventually(lambda: timeline(s, server, me) == [in_group["id"]] + old[::-1])
    r = s.delete(f"{server.url}{API}/users/{me}/follows/{star}")
    assert r.status_code == 200
    eventually(lambda: timeline(s, server, me) == [in_group["id"]])


def test_join_backfills_and_leave_removes(server):
    s = server.session()
    me, g, friend = uid("me"), uid("g"), uid("friend")
    follow(s, server, me, friend)
    by_friend = post(s, server, actor=friend, verb="post", target=f"group:{g}", time=NOW - 3000)
    by_other = post(s, server, actor=uid("o"), verb="post", target=f"group:{g}", time=NOW - 2000)
    eventually(lambda: timeline(s, server, me) == [by_friend["id"]])
    join(s, server, g, me)
    eventually(lambda: timeline(s, server, me) == [by_other["id"], by_friend["id"]])
    r = s.delete(f"{server.url}{API}/groups/{g}/members/{me}")
    assert r.status_code == 200
    # what comes through the follow stays
    eventually(lambda: timeline(s, server, me) == [by_friend["id"]])


# -- secondary index ----------------------------------------------------------------


def test_secondary_index_queries_in_any_combination(server):
    s = server.session()
    a, b, obj, tgt = uid("a"), uid("b"), uid("obj"), uid("tgt")
    x1 = post(s, server, actor=a, verb="like", object=obj, time=NOW - 4000)["id"]
    x2 = post(s, server, actor=b, verb="like", object=obj, target=tgt, time=NOW - 3000)["id"]
    x3 = post(s, server, actor=a, verb="comment", object=obj, target=tgt, time=NOW - 2000)["id"]
    x4 = post(s, server, actor=a, verb="like", object=uid("other"), time=NOW - 1000)["id"]
    q = f"{server.url}{API}/activities"
    assert ids(page(s, q, object=obj)) == [x3, x2, x1]
    assert ids(page(s, q, actor=a)) == [x4, x3, x1]
    assert ids(page(s, q, actor=a, verb="like")) == [x4, x1]
    assert ids(page(s, q, object=obj, verb="like")) == [x2, x1]
    assert ids(page(s, q, target=tgt)) == [x3, x2]
    assert ids(page(s, q, target=tgt, actor=a)) == [x3]
    assert ids(page(s, q, actor=a, verb="like", object=obj, target=tgt)) == []
    assert walk(s, q, 1, actor=a) == [x4, x3, x1]
    assert_problem(s.get(q), 400)
    assert_problem(s.get(q, params={"actor": "bad id"}), 400, "actor")


# -- bad input ------------------------------------------------------------------------


def test_bad_input_is_4xx_and_stores_nothing(server):
    s = server.session()
    a = uid("a")
    url = f"{server.url}{API}/activities"
    cases = [
        ({"verb": "post"}, "actor"),
        ({"actor": a}, "verb"),
        ({"actor": "bad actor", "verb": "post"}, "actor"),
        ({"actor": a, "verb": "post", "object": "a/b"}, "object"),
        ({"actor": a, "verb": "post", "time": -1}, "time"),
        ({"actor": a, "verb": "post", "time": "soon"}, "time"),
        ({"actor": a, "verb": "post", "colour": "red"}, "colour"),
        ({"actor": a, "verb": 7}, "verb"),
    ]
    for body, field in cases:
        assert_problem(s.post(url, json=body), 400, field)
    r = s.post(url, data="{not json", headers={"Content-Type": "application/json"})
    assert_problem(r, 400)
    r = s.post(url, json={"actor": a, "verb": "post", "data": {"blob": "x" * (70 * 1024)}})
    assert_problem(r, 413, "data")
    f = f"{server.url}{API}/users/{a}/feed"
    assert_problem(s.get(f, params={"limit": 1001}), 400, "limit")
    assert_problem(s.get(f, params={"offset": "x"}), 400, "offset")
    assert_problem(s.get(f, params={"cursor": "not-a-cursor"}), 400, "cursor")
    assert_problem(s.get(f, params={"before": "yesterday"}), 400, "before")
    assert_problem(s.get(f"{server.url}{API}/activities/nope"), 404)
    assert_problem(s.put(f"{server.url}{API}/activities/0123456789abcdef0123", json={"data": 1}), 404)
    assert feed(s, server, a) == []
    assert ids(page(s, url, actor=a)) == []


def test_auth_user_tokens_act_only_as_their_user(secure_server):
    h = secure_server
    a, b = uid("a"), uid("b")
    sa, sb = h.session(h.token(a)), h.session(h.token(b))
    act = sa.post(f"{h.url}{API}/activities", json={"actor": a, "verb": "post"})
    assert act.status_code == 201
    assert_problem(sa.post(f"{h.url}{API}/activities", json={"actor": b, "verb": "post"}), 403)
    aid = act.json()["id"]
    assert_problem(sb.put(f"{h.url}{API}/activities/{aid}", json={"data": 1}), 403)
    assert_problem(sb.delete(f"{h.url}{API}/activities/{aid}"), 403)
    assert_problem(sb.get(f"{h.url}{API}/users/{a}/timeline"), 403)
    assert sa.get(f"{h.url}{API}/users/{a}/timeline").status_code == 200
    assert sb.get(f"{h.url}{API}/users/{a}/feed").status_code == 200
    assert sb.get(f"{h.url}{API}/activities/{aid}").status_code == 200
    assert sa.put(f"{h.url}{API}/activities/{aid}", json={"data": 2}).status_code == 200


# -- servers with their own settings ------------------------------------------------


def own_queue():
    """A fan-out queue of the test's own: on the shared Redis Cluster every other
    server's workers would otherwise take this server's jobs (the scale-out design),
    and the tests below read this process's fan-out counters."""
    return ["--set", f"fanout_queue={uid('q')}"]


def test_hybrid_big_accounts_are_merged_at_read_time(herald, backend):
    h = herald.start(backend, "--set", "fanout_threshold=2", *own_queue())
    s = h.session()
    star, fans, small = uid("star"), [uid(f"fan{i}") for i in range(3)], uid("small")
    for f in fans:
        follow(s, h, f, star)
    follow(s, h, fans[0], small)
    eventually(lambda: metric(h, "herald_fanout_queue_depth") == 0)
    before = metric(h, "herald_fanout_entries_total")
    # the post that makes star big; then one more
    p1 = post(s, h, actor=star, verb="post", time=NOW - 3000)
    p2 = post(s, h, actor=small, verb="post", time=NOW - 2000)
    eventually(lambda: timeline(s, h, fans[0]) == [p2["id"], p1["id"]])
    p3 = post(s, h, actor=star, verb="post", time=NOW - 1000)
    # visible at once: read-time merge, no fan-out
    assert timeline(s, h, fans[0]) == [p3["id"], p2["id"], p1["id"]]
    for f in fans[1:]:
        assert timeline(s, h, f) == [p3["id"], p1["id"]]
    eventually(lambda: metric(h, "herald_fanout_queue_depth") == 0)
    # only small's post was fanned out (to one follower)
    assert metric(h, "herald_fanout_entries_total") - before == 1
    # a new follower of a big account sees its posts too; unfollow hides them
    late = uid("late")
    follow(s, h, late, star)
    eventually(lambda: timeline(s, h, late) == [p3["id"], p1["id"]])
    s.delete(f"{h.url}{API}/users/{late}/follows/{star}")
    eventually(lambda: timeline(s, h, late) == [])


def test_timeline_keeps_timeline_max(herald, backend):
    h = herald.start(backend, "--set", "timeline_max=5", *own_queue())
    s = h.session()
    me, a = uid("me"), uid("a")
    follow(s, h, me, a)
    made = [post(s, h, actor=a, verb="post", time=NOW - 10000 + i)["id"] for i in range(12)]
    want = made[::-1][:5]
    eventually(lambda: timeline(s, h, me, limit=100) == want)
    assert walk(s, f"{h.url}{API}/users/{me}/timeline", 2) == want
    # the actor's own feed is not a timeline: it keeps everything
    assert len(feed(s, h, a, limit=100)) == 12


def test_timeline_entries_expire_after_timeline_ttl(herald, backend):
    h = herald.start(backend, "--set", "timeline_ttl=3s", *own_queue())
    s = h.session()
    me, a = uid("me"), uid("a")
    follow(s, h, me, a)
    act = post(s, h, actor=a, verb="post", time=int(time.time() * 1000))
    eventually(lambda: timeline(s, h, me) == [act["id"]])
    eventually(lambda: timeline(s, h, me) == [], timeout=10)
    assert feed(s, h, a) == [act["id"]]


FOLLOWERS = 3000


def test_fanout_resumes_after_kill9_mid_way(herald, backend):
    # Page by page: each page of 100 is written, then checkpointed.
    fanout_kill9_mid_way(herald, backend, "fanout_bulk=0")


def test_gathered_fanout_resumes_after_kill9_mid_way(herald):
    # RocksDB gathering adds into table files of 1,000 (fanout_bulk): pages
    # are gathered, and written and checkpointed every 1,000 entries; what a
    # kill finds gathered is not written, and runs again from the checkpoint.
    fanout_kill9_mid_way(herald, "rocksdb", "fanout_bulk=1000")


def fanout_kill9_mid_way(herald, backend, bulk):
    # Small, throttled batches so the kill lands mid-way; a short lease so that
    # the Redis backend hands the dead worker's job out again soon.
    args = ["--set", "fanout_batch=100", "--set", "fanout_throttle=150ms", "--set", "fanout_lease=2s",
            "--set", bulk, *own_queue()]
    h = herald.start(backend, *args)
    star = uid("star")
    fans = [f"{star}-fan{i}" for i in range(FOLLOWERS)]

    def follow_range(lo, hi):
        s = h.session()
        for f in fans[lo:hi]:
            follow(s, h, f, star)

    threads = [threading.Thread(target=follow_range, args=(i * 750, (i + 1) * 750)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = h.session()
    eventually(lambda: metric(h, "herald_fanout_queue_depth") == 0, timeout=120)
    before = metric(h, "herald_fanout_entries_total")
    act = post(s, h, actor=star, verb="post")
    eventually(lambda: metric(h, "herald_fanout_entries_total") - before >= 500, timeout=60)
    done_before_kill = metric(h, "herald_fanout_entries_total") - before
    assert done_before_kill < FOLLOWERS, "fan-out finished before the kill: the test proves nothing"
    h.kill()
    h = restart_on_new_port(h)
    s = h.session()
    eventually(lambda: metric(h, "herald_fanout_queue_depth") == 0, timeout=120)
    # resumed from its checkpoint, not restarted: the new process wrote only the rest
    written_after = metric(h, "herald_fanout_entries_total")
    assert written_after <= FOLLOWERS - done_before_kill + 100, (done_before_kill, written_after)
    missing = [f for f in fans if timeline(s, h, f) != [act["id"]]]
    assert missing == [], f"{len(missing)} followers never got the activity"


def test_two_servers_on_one_redis_cluster_share_the_fanout(herald):
    """Two servers on one Redis Cluster and one fan-out queue (the scale-out design):
    activities posted through either reach every follower's timeline, read through
    either, exactly once and newest first, and each job is fanned out by one server only
    (their fan-out counters add up to one entry per follower per activity)."""
    q = own_queue()
    a, b = herald.start("redis", *q), herald.start("redis", *q)
    stars = [uid("star") for _ in range(4)]
    fans = [f"{uid('fan')}" for _ in range(120)]
    follows = {f: [st for k, st in enumerate(stars) if (i + k) % 3 != 0] for i, f in enumerate(fans)}

    def follow_some(part):
        h, s = (a, b)[part % 2], requests.Session()
        for f in fans[part::4]:
            for st in follows[f]:
                follow(s, h, f, st)

    threads = [threading.Thread(target=follow_some, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h in (a, b):
        eventually(lambda h=h: metric(h, "herald_fanout_queue_depth") == 0, timeout=60)
    before = metric(a, "herald_fanout_entries_total") + metric(b, "herald_fanout_entries_total")
    s = requests.Session()
    posted = {st: [] for st in stars}
    t0 = int(time.time() * 1000) - 60_000  # recent: timelines keep 60 days
    for n in range(12):  # in time order, alternating servers
        st = stars[n % 4]
        posted[st].append(post(s, (a, b)[n % 2], actor=st, verb="post", time=t0 + n)["id"])
    want_entries = sum(len(posted[st]) for f in fans for st in follows[f])
    eventually(lambda: metric(a, "herald_fanout_entries_total") + metric(b, "herald_fanout_entries_total")
               - before >= want_entries, timeout=60)
    for i, f in enumerate(fans):
        want = sorted((x for st in follows[f] for x in posted[st]), key=lambda x: -int(x[:12], 16))
        got = timeline(s, (a, b)[i % 2], f, limit=50)
        assert got == want, f"{f}: timeline {got}, want {want}"
    done = metric(a, "herald_fanout_entries_total") + metric(b, "herald_fanout_entries_total") - before
    assert done == want_entries, f"{done} timeline entries written for {want_entries}: a job ran twice"


def test_timeline_first_pages_are_kept_until_they_change(server):
    """RocksDB keeps a home timeline's first page in memory (the memos' share of `memory`)
    until a key it was read from is written: the same page again reads nothing from the store, and a
    fan-out, an update or a delete shows at once. Redis Cluster (shared) keeps none."""
    s = server.session()
    a, f = uid("a"), uid("f")
    follow(s, server, f, a)
    x = post(s, server, actor=a, verb="post", data={"v": 1})
    eventually(lambda: timeline(s, server, f) == [x["id"]])
    kept = server.backend == "rocksdb"
    if not kept:
        assert "herald_timeline_cache_hits_total" not in requests.get(f"{server.url}/metrics").text
    else:
        # A read that raced the fan-out's write (visible before the write's stamps are
        # counted) is kept and then found stale: one more read keeps the page for good.
        assert timeline(s, server, f) == [x["id"]]
        hits = metric(server, "herald_timeline_cache_hits_total")
        ranges = metric(server, 'herald_store_ops_total{op="tlrange"}')
        assert timeline(s, server, f) == [x["id"]]
        assert metric(server, "herald_timeline_cache_hits_total") == hits + 1
        assert metric(server, 'herald_store_ops_total{op="tlrange"}') == ranges, "a kept page reads nothing"
        assert metric(server, "herald_timeline_cache_pages") >= 1
        assert metric(server, "herald_timeline_cache_bytes") > 0
    y = post(s, server, actor=a, verb="post", data={"v": 1})
    eventually(lambda: timeline(s, server, f) == [y["id"], x["id"]])
    r = s.put(f"{server.url}{API}/activities/{x['id']}", json={"data": {"v": 2}})
    assert r.status_code == 200, r.text
    assert [a["data"] for a in page(s, f"{server.url}{API}/users/{f}/timeline")["activities"]] == [{"v": 1}, {"v": 2}]
    assert s.delete(f"{server.url}{API}/activities/{y['id']}").status_code == 200
    assert timeline(s, server, f) == [x["id"]]
    assert timeline(s, server, f, limit=1) == [x["id"]]


def test_metrics_show_fanout_queue(server):
    text = requests.get(f"{server.url}/metrics").text
    for name in ("herald_fanout_queue_depth", "herald_fanout_lag_seconds", "herald_fanout_entries_total",
                 "herald_fanout_jobs_total"):
        assert re.search(rf"^{name} \d", text, re.M), name


# -- herald load ------------------------------------------------------------------------


def test_herald_load_builds_a_dataset_the_server_serves(herald, backend, tmp_path):
    from conftest import run_cli, store_arg
    data = tmp_path / "data"
    store = store_arg(backend, data)
    r = run_cli("load", "--users", "120", "--activities", "2", "--store", store, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"users 120\s+follows (\d+).*activities (\d+)", r.stdout)
    assert m, r.stdout
    follows, activities = int(m.group(1)), int(m.group(2))
    assert follows > 120 * 20 and activities > 120
    assert re.search(r"fan-out .*: (\d+) timeline entries, \d+ entries/s", r.stdout), r.stdout
    # on RocksDB the fan-out starts once the graph is compacted, so that its time is its own
    waits = r.stderr.find("waiting for the graph's compactions before the fan-out")
    assert (waits >= 0) == (backend == "rocksdb"), r.stderr
    assert waits < r.stderr.find("fan-out jobs:"), r.stderr
    assert re.search(r"graph settled \d+\.\ds  fan-out", r.stdout), r.stdout
    # it waits for RocksDB's flushes and compactions before it exits; Redis has none to wait for
    settled = re.search(r"^settled in \d+\.\ds$", r.stdout, re.M)
    assert bool(settled) == (backend == "rocksdb"), r.stdout
    # not a terminal: no progress bar, one line per phase
    assert "\r" not in r.stderr
    h = herald.start(backend, data_dir=data)
    s = h.session()
    # u0 is the most popular user: followed by many
    followers = page(s, f"{h.url}{API}/users/u0/followers", limit=1000)["users"]
    assert len(followers) > 30
    non_empty = sum(1 for u in range(0, 120, 10) if timeline(s, h, f"u{u}"))
    assert non_empty >= 10, "timelines of the loaded users are filled by the fan-out"
    assert metric(h, "herald_fanout_queue_depth") == 0


def test_herald_load_can_leave_the_fanout_for_later(herald, backend, tmp_path):
    # --no-fanout builds the dataset and leaves its jobs queued; --fanout-only
    # drains them (timed) and builds nothing; a second drain finds nothing
    from conftest import run_cli, store_arg
    data = tmp_path / "data"
    store, queue = store_arg(backend, data), own_queue()
    r = run_cli("load", "--users", "60", "--store", store, "--no-fanout", *queue, timeout=300)
    assert r.returncode == 0, r.stderr
    assert re.search(r"users 60 .*activities (\d+): fan-out jobs left queued", r.stdout), r.stdout
    r = run_cli("load", "--store", store, "--fanout-only", *queue, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"fan-out \d+\.\ds after \d+\.\ds settling: (\d+) timeline entries", r.stdout)
    assert m and int(m.group(1)) > 60 * 10, r.stdout
    assert "users" not in r.stdout, "it built nothing"
    r = run_cli("load", "--store", store, "--fanout-only", *queue, timeout=300)
    assert re.search(r": 0 timeline entries", r.stdout), r.stdout
    r = run_cli("load", "--store", store, "--fanout-only", "--no-fanout")
    assert r.returncode == 2, r.stderr


def test_herald_load_rejects_bad_arguments(tmp_path):
    from conftest import run_cli
    for args in (["--users", "x"], ["--users", "1"], ["--activities"], ["--bogus", "1"]):
        r = run_cli("load", *args, "--store", f"rocksdb:{tmp_path / 'd'}")
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert r.stderr.strip(), args
