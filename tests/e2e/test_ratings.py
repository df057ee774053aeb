"""Ratings and members (API.md "Stories and ratings"; seed: social reader data model).

A subject (a user, a feed, the home-page builder) rates an object (a story): 1 up, -1
down, 0 seen. The latest rating of a subject for an object wins; a story's score is the
sum of its ratings. Rankings: a member's top-rated stories since a date, and the
highest-scoring (or hottest) stories a member has not rated yet.

Every test runs on both backends through the session `server` fixture. Rankings are
global and the redis cluster outlives the run, so the ranking tests never assume an
empty world: their stories get many votes from unique voters, only the relative order
of the test's own stories is checked, and when the world is crowded enough to push them
out of a 1000-long answer, the test's subject marks the crowd as seen (rating 0) and asks
again. The rocksdb server belongs to this session alone: there the whole answer is also
checked to be in order.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import assert_problem, uid
from test_stories import (UNKNOWN_ID, YEAR_MS, create_story, fresh_url, future_base,
                          get_story, now_ms, post_story)

T = 30
HOUR = 3600 * 1000
DAY = 24 * HOUR


# -- helpers ------------------------------------------------------------------------------


def put_rating(server, subject, obj, body, session=None, **kw):
    s = session or requests
    return s.put(f"{server.url}/api/v1/ratings/{subject}/{obj}", json=body, timeout=T, **kw)


def rate(server, subject, obj, score, t=None, session=None):
    body = {"score": score}
    if t is not None:
        body["time"] = t
    r = put_rating(server, subject, obj, body, session)
    assert r.status_code == 200, f"PUT /api/v1/ratings/{subject}/{obj} {body}: {r.status_code} {r.text[:300]}"
    got = r.json()
    assert got.get("subject") == subject and got.get("object") == obj and got.get("score") == score, got
    if t is not None:
        assert got.get("time") == t, got
    return got


def has(d, **fields):
    """d holds these fields with these values (more fields are allowed)."""
    return all(k in d and d[k] == v and type(d[k]) is type(v) for k, v in fields.items())


def get_rating(server, subject, obj, session=None):
    return (session or requests).get(f"{server.url}/api/v1/ratings/{subject}/{obj}", timeout=T)


def votes(server, sid, n, score=1):
    """n ratings of score from n fresh voters, in parallel."""
    subjects = [uid("voter") for _ in range(n)]

    def one(subj):
        r = put_rating(server, subj, sid, {"score": score})
        assert r.status_code == 200, f"vote on {sid}: {r.status_code} {r.text[:200]}"

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(one, subjects))
    return subjects


def check_rating(x):
    for k in ("subject", "object", "score", "time"):
        assert k in x, f"a rating lacks {k!r}: {x}"
    assert x["score"] in (-1, 0, 1) and isinstance(x["time"], int), x


def get_list(server, path, key, session=None, **params):
    r = (session or requests).get(server.url + path, params=params, timeout=T)
    assert r.status_code == 200, f"GET {path} {params}: {r.status_code} {r.text[:300]}"
    body = r.json()
    assert isinstance(body.get(key), list), body
    return body


def ratings_all(server, path, session=None, limit=1000, max_pages=200, **params):
    """Every rating of a rating list, following next_cursor."""
    out, cursor = [], None
    for _ in range(max_pages):
        p = dict(params, limit=limit)
        if cursor:
            p["cursor"] = cursor
        body = get_list(server, path, "ratings", session, **p)
        for x in body["ratings"]:
            check_rating(x)
        out += body["ratings"]
        cursor = body.get("next_cursor")
        if not cursor or not body["ratings"]:
            return out
    pytest.fail(f"GET {path} did not end within {max_pages} pages")


def triples(ratings):
    return [(x["subject"], x["object"], x["score"], x["time"]) for x in ratings]


def stories_of(body):
    for s in body["stories"]:
        for k in ("id", "url", "time", "score"):
            assert k in s, f"a story list item lacks {k!r}: {s}"
        assert "content" not in s, s
    return body["stories"]


def top_rated(server, subject, session=None, **params):
    return stories_of(get_list(server, f"/api/v1/members/{subject}/top-rated", "stories", session, **params))


def unseen(server, subject, rank, mine, expect_present, limit=1000):
    """The subject's unseen list (rank top or hot). If it is full and does not hold all of
    expect_present, the world is crowded: rate 0 (seen) every story in it that is not one
    of ours (mine) and ask again."""
    sess = requests.Session()
    for _ in range(8):
        items = stories_of(get_list(server, f"/api/v1/members/{subject}/unseen", "stories", sess,
                                    rank=rank, limit=limit))
        ids = {s["id"] for s in items}
        if set(expect_present) <= ids or len(items) < limit:
            return items
        crowd = [s["id"] for s in items if s["id"] not in mine]
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda sid: rate(server, subject, sid, 0), crowd))
    return items


def own_order(items, mine):
    return [s["id"] for s in items if s["id"] in mine]


def assert_scores_descending(items, what):
    scores = [s["score"] for s in items]
    assert scores == sorted(scores, reverse=True), f"{what} is not by score, highest first: {scores}"


# -- single ratings ------------------------------------------------------------------------------


def test_put_and_get_rating(server):
    s = create_story(server, fresh_url())
    subj = uid("subj")
    t = now_ms() - 1000
    r = put_rating(server, subj, s["id"], {"score": 1, "time": t})
    assert r.status_code == 200, r.text
    assert r.headers.get("Content-Type", "").startswith("application/json")
    assert has(r.json(), subject=subj, object=s["id"], score=1, time=t), r.json()
    r = get_rating(server, subj, s["id"])
    assert r.status_code == 200, r.text
    assert has(r.json(), subject=subj, object=s["id"], score=1, time=t), r.json()
    assert get_story(server, s["id"])["score"] == 1


def test_rating_missing_time_means_now(server):
    s = create_story(server, fresh_url())
    subj = uid("subj")
    before = now_ms()
    got = rate(server, subj, s["id"], 0)
    after = now_ms()
    assert before - 2000 <= got["time"] <= after + 2000, (before, got, after)
    assert get_rating(server, subj, s["id"]).json()["time"] == got["time"]


def test_no_rating_404(server):
    s = create_story(server, fresh_url())
    assert_problem(get_rating(server, uid("subj"), s["id"]), 404)
    assert_problem(get_rating(server, uid("subj"), UNKNOWN_ID), 404)


def test_rating_unknown_story_404(server):
    subj = uid("subj")
    for obj in (UNKNOWN_ID, "fedcba9876543210"):
        r = put_rating(server, subj, obj, {"score": 1})
        assert_problem(r, 404)
        assert_problem(get_rating(server, subj, obj), 404)
    assert get_list(server, f"/api/v1/ratings/{subj}", "ratings")["ratings"] == []
    assert_problem(requests.get(f"{server.url}/api/v1/stories/{UNKNOWN_ID}/ratings", timeout=T), 404)


def test_score_after_rerating(server):
    """+1 then -1 by one subject moves the score by -2; the latest rating wins."""
    s = create_story(server, fresh_url())
    sid = s["id"]
    a, b = uid("a"), uid("b")
    t = now_ms() - 10 * 60 * 1000
    rate(server, a, sid, 1, t)
    rate(server, b, sid, 1, t + 1)
    assert get_story(server, sid)["score"] == 2
    rate(server, a, sid, -1, t + 2)
    assert get_story(server, sid)["score"] == 0
    assert has(get_rating(server, a, sid).json(), subject=a, object=sid, score=-1, time=t + 2)
    rate(server, a, sid, -1, t + 3)  # the same score again: no change
    assert get_story(server, sid)["score"] == 0
    rate(server, b, sid, -1, t + 4)
    assert get_story(server, sid)["score"] == -2
    rate(server, a, sid, 0, t + 5)
    assert get_story(server, sid)["score"] == -1
    rate(server, a, sid, 1, t + 6)
    assert get_story(server, sid)["score"] == 0
    r = requests.get(f"{server.url}/api/v1/stories", params={"url": s["url"]}, timeout=T)
    assert r.json()["score"] == 0


def test_older_rating_does_not_override_newer(server):
    """"The latest rating wins" is by the rating's time: a PUT carrying an older time than
    the stored rating (a late or replayed write) changes nothing, neither the rating nor
    the score nor the lists."""
    s = create_story(server, fresh_url())
    sid = s["id"]
    subj = uid("subj")
    t = now_ms() - HOUR
    rate(server, subj, sid, 1, t)
    r = put_rating(server, subj, sid, {"score": -1, "time": t - 1})
    assert r.status_code == 200, r.text
    assert has(get_rating(server, subj, sid).json(), score=1, time=t)
    assert get_story(server, sid)["score"] == 1
    assert triples(ratings_all(server, f"/api/v1/ratings/{subj}")) == [(subj, sid, 1, t)]
    assert triples(ratings_all(server, f"/api/v1/stories/{sid}/ratings")) == [(subj, sid, 1, t)]
    rate(server, subj, sid, -1, t + 1)
    assert get_story(server, sid)["score"] == -1


# -- rating lists -----------------------------------------------------------------------------------


def test_ratings_by_subject_object_and_date_after_rerating(server):
    """After a re-rating, every list holds one entry for the pair: the latest."""
    s = create_story(server, fresh_url())
    sid = s["id"]
    subj, other = uid("subj"), uid("other")
    # Rating times after every rating the server has (at least two years ahead): the
    # global list since t0 then holds only this test's (and concurrent writers') ratings.
    newest = get_list(server, "/api/v1/ratings", "ratings", limit=1)["ratings"]
    t0 = max([now_ms() + 2 * YEAR_MS] + [x["time"] + 1000 for x in newest])
    rate(server, subj, sid, 1, t0 + 10)
    rate(server, other, sid, 1, t0 + 20)
    rate(server, subj, sid, -1, t0 + 30)
    assert get_story(server, sid)["score"] == 0

    latest = (subj, sid, -1, t0 + 30)
    by_subject = ratings_all(server, f"/api/v1/ratings/{subj}")
    assert triples(by_subject) == [latest], by_subject
    by_object = ratings_all(server, f"/api/v1/stories/{sid}/ratings")
    assert triples(by_object) == [latest, (other, sid, 1, t0 + 20)], by_object
    mine = {subj, other}
    by_date = [x for x in ratings_all(server, "/api/v1/ratings", since=t0) if x["subject"] in mine]
    assert triples(by_date) == [latest, (other, sid, 1, t0 + 20)], by_date
    # since (on the rating time) drops the older one.
    by_date = [x for x in ratings_all(server, "/api/v1/ratings", since=t0 + 25) if x["subject"] in mine]
    assert triples(by_date) == [latest]
    # And re-rating back to +1 at a later time moves the entry to the front.
    rate(server, other, sid, 0, t0 + 40)
    by_date = [x for x in ratings_all(server, "/api/v1/ratings", since=t0) if x["subject"] in mine]
    assert triples(by_date) == [(other, sid, 0, t0 + 40), latest]
    assert triples(ratings_all(server, f"/api/v1/stories/{sid}/ratings")) == [(other, sid, 0, t0 + 40), latest]


def test_ratings_by_subject_newest_first_since_and_paging(server):
    subj = uid("subj")
    t0 = now_ms() - DAY
    sids = [create_story(server, fresh_url())["id"] for _ in range(6)]
    for i, sid in enumerate(sids):
        rate(server, subj, sid, (1, -1, 0)[i % 3], t0 + i * 1000)
    # Re-rate the oldest at the newest time: one entry, at the front.
    rate(server, subj, sids[0], -1, t0 + 10_000)
    want = [(subj, sids[0], -1, t0 + 10_000)] + \
        [(subj, sids[i], (1, -1, 0)[i % 3], t0 + i * 1000) for i in range(5, 0, -1)]
    assert triples(ratings_all(server, f"/api/v1/ratings/{subj}")) == want
    # Paging two at a time gives the same, without repeats.
    assert triples(ratings_all(server, f"/api/v1/ratings/{subj}", limit=2)) == want
    body = get_list(server, f"/api/v1/ratings/{subj}", "ratings", limit=2)
    assert len(body["ratings"]) == 2 and body.get("next_cursor"), body
    # since: ratings after t0 + 2500 (the re-rated one counts at its new time).
    assert triples(ratings_all(server, f"/api/v1/ratings/{subj}", since=t0 + 2500)) == want[:4]
    assert triples(ratings_all(server, f"/api/v1/ratings/{subj}", since=t0 + 20_000)) == []
    # The default page (20) holds all six.
    assert triples(get_list(server, f"/api/v1/ratings/{subj}", "ratings")["ratings"]) == want


def test_unknown_subject_has_no_ratings(server):
    subj = uid("nobody")
    assert get_list(server, f"/api/v1/ratings/{subj}", "ratings")["ratings"] == []
    assert top_rated(server, subj) == []


def test_story_ratings_paging(server):
    s = create_story(server, fresh_url())
    sid = s["id"]
    t0 = now_ms() - HOUR
    subjects = [uid("v") for _ in range(7)]
    for i, subj in enumerate(subjects):
        rate(server, subj, sid, 1 if i % 2 else -1, t0 + i)
    want = [(subjects[i], sid, 1 if i % 2 else -1, t0 + i) for i in range(6, -1, -1)]
    assert triples(ratings_all(server, f"/api/v1/stories/{sid}/ratings", limit=3)) == want
    assert get_story(server, sid)["score"] == 3 - 4


def test_concurrent_votes_all_count(server):
    s = create_story(server, fresh_url())
    subjects = votes(server, s["id"], 40, 1)
    assert get_story(server, s["id"])["score"] == 40
    got = ratings_all(server, f"/api/v1/stories/{s['id']}/ratings")
    assert sorted(x["subject"] for x in got) == sorted(subjects)


def flipper_threads(servers, sid, flipper, n=8):
    """A worker for each of n threads that re-rate sid as flipper all at once (thread k
    through servers[k % len(servers)]), 12 times each, cycling 1, -1, 0."""
    barrier = threading.Barrier(n)

    def worker(k):
        h, sess = servers[k % len(servers)], requests.Session()
        barrier.wait(timeout=20)
        for j in range(12):
            r = put_rating(h, flipper, sid, {"score": (1, -1, 0)[(k + j) % 3]}, sess)
            assert r.status_code == 200, r.text

    return [lambda k=k: worker(k) for k in range(n)]


def assert_score_is_the_ratings_sum(h, sid, flipper, steady):
    """After the flips: the story's score is the sum of the two subjects' latest ratings,
    and each subject has one rating of it."""
    final = get_rating(h, flipper, sid).json()["score"]
    assert get_story(h, sid)["score"] == final + 1, \
        f"score {get_story(h, sid)['score']} after concurrent re-ratings; the ratings sum to {final + 1}"
    got = ratings_all(h, f"/api/v1/stories/{sid}/ratings")
    assert sorted(x["subject"] for x in got) == sorted([flipper, steady]), got


def test_concurrent_rerating_keeps_score_consistent(server):
    """One subject flips its rating from many threads at once: the score must end as the
    sum of the latest ratings (no lost or doubled deltas)."""
    sid = create_story(server, fresh_url())["id"]
    flipper, steady = uid("flip"), uid("steady")
    rate(server, steady, sid, 1)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda f: f(), flipper_threads([server], sid, flipper)))
    assert_score_is_the_ratings_sum(server, sid, flipper, steady)


def test_two_servers_on_one_redis_cluster_agree(herald):
    """Two herald servers on one Redis Cluster: one subject re-rates a story through both
    at once, and URLs are added to the story through both at once. Each server orders its
    own writes with in-process locks; only the leases in the store (core/lease.h) order
    them across servers, so without them the score drifts from the ratings and URLs are
    lost. RocksDB has no such case: one process owns its directory."""
    a, b = herald.start("redis"), herald.start("redis")
    sid = create_story(a, fresh_url())["id"]
    flipper, steady = uid("flip"), uid("steady")
    rate(b, steady, sid, 1)

    def add_urls(k):
        h, sess = (a, b)[k % 2], requests.Session()
        for j in range(6):
            r = sess.post(f"{h.url}/api/v1/stories/{sid}/urls",
                          json={"url": f"https://mirror{k}.example.org/{sid}/{j}"}, timeout=T)
            assert r.status_code == 200 and r.json().get("added") is not False, r.text

    jobs = flipper_threads([a, b], sid, flipper) + [lambda k=k: add_urls(k) for k in range(4)]
    with ThreadPoolExecutor(len(jobs)) as ex:
        list(ex.map(lambda f: f(), jobs))
    for h in (a, b):
        assert_score_is_the_ratings_sum(h, sid, flipper, steady)
    urls = get_story(b, sid)["urls"]
    assert len(urls) == 1 + 4 * 6, f"{len(urls)} URLs kept of {1 + 4 * 6}: {urls}"


# -- top-rated ---------------------------------------------------------------------------------------


def test_top_rated_since(server):
    """The stories a member rated (any score) since a date, highest story score first.
    `since` is on the rating's time: an old story rated recently is in, a story last
    rated before the date is out."""
    subj = uid("reader")
    t0 = now_ms() - HOUR
    old = t0 - 10 * DAY  # every story is older than the date
    sids = {k: create_story(server, fresh_url(), f"<p>{k}</p>", old + i)["id"] for i, k in enumerate("ABCDE")}
    base = {"A": 9, "B": 3, "C": 6, "D": 12, "E": 7}
    for k, n in base.items():
        votes(server, sids[k], n)
    rate(server, subj, sids["A"], 1, t0 + 1000)    # A 10
    rate(server, subj, sids["B"], -1, t0 + 2000)   # B 2
    rate(server, subj, sids["C"], 0, t0 + 3000)    # C 6
    rate(server, subj, sids["D"], 1, t0 - 100_000)  # D 13, rated before the date
    rate(server, subj, sids["E"], 1, t0 - 100_000)  # E 8 ...
    rate(server, subj, sids["E"], 0, t0 + 4000)    # ... re-rated after it: E 7
    score = {"A": 10, "B": 2, "C": 6, "D": 13, "E": 7}
    for k in "ABCDE":
        assert get_story(server, sids[k])["score"] == score[k], k

    got = top_rated(server, subj, since=t0)
    assert [(s["id"], s["score"]) for s in got] == [(sids[k], score[k]) for k in "AECB"], \
        f"top-rated since: got {[(s['id'], s['score']) for s in got]}, ids {sids}"
    assert [s["id"] for s in top_rated(server, subj, since=t0, limit=2)] == [sids["A"], sids["E"]]
    assert [s["id"] for s in top_rated(server, subj, since=t0 + 2500)] == [sids[k] for k in "EC"]
    assert [s["id"] for s in top_rated(server, subj, since=t0 - 200_000)] == [sids[k] for k in "DAECB"]
    assert top_rated(server, subj, since=t0 + 10_000) == []
    # A vote by someone else reorders at once.
    votes(server, sids["B"], 9)  # B 11
    assert [s["id"] for s in top_rated(server, subj, since=t0)] == [sids[k] for k in "BAEC"]


def test_top_rated_of_a_member_who_rated_a_thousand(server):
    """A member with 1000 ratings has a seen set (HR_SEEN_SET_MIN): its top-rated is found
    by walking the ranking and keeping what it rated, not by ranking all its ratings. The
    answer is the same: only its stories, by score then id, each with its own rating, and
    `since` on the rating's time."""
    n = 1000
    subj = uid("avid")
    t0 = now_ms() - 2 * DAY
    local = threading.local()

    def sess():
        if not hasattr(local, "s"):
            local.s = requests.Session()
        return local.s

    def make(i):
        return create_story(server, fresh_url(), "<p>x</p>", t0 - DAY + i, session=sess())["id"]

    with ThreadPoolExecutor(8) as ex:
        sids = list(ex.map(make, range(n)))
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: rate(server, subj, sids[i], 0, t0 + i, session=sess()), range(n)))
    # Five of them voted up by others (5 down to 1), one the member likes too.
    for k in range(5):
        votes(server, sids[k], 5 - k)
    rate(server, subj, sids[4], 1, t0 + n)  # sids[4]: 1 + 1
    score = {sid: 0 for sid in sids}
    score.update({sids[0]: 5, sids[1]: 4, sids[2]: 3, sids[3]: 2, sids[4]: 2})
    mine = {sid: (0, t0 + i) for i, sid in enumerate(sids)}
    mine[sids[4]] = (1, t0 + n)
    order = sorted(sids, key=lambda sid: (-score[sid], [-ord(c) for c in sid]))

    def check(items, want):
        assert [s["id"] for s in items] == want, ([s["id"] for s in items][:10], want[:10])
        for s in items:
            assert s["score"] == score[s["id"]], s
            assert s.get("rating") == mine[s["id"]][0], s

    check(top_rated(server, subj, limit=6), order[:6])
    # Every page, following the cursor: all 1000, in order.
    got, cursor = [], None
    for _ in range(20):
        params = {"limit": 150}
        if cursor:
            params["cursor"] = cursor
        body = get_list(server, f"/api/v1/members/{subj}/top-rated", "stories", **params)
        got += stories_of(body)
        cursor = body.get("next_cursor")
        if not cursor:
            break
    check(got, order)
    # since: the ratings after t0 + 990 (the last nine, and sids[4]'s).
    since = [sid for sid in order if mine[sid][1] > t0 + 990]
    assert len(since) == 10
    check(top_rated(server, subj, since=t0 + 990, limit=100), since)
    check(top_rated(server, subj, since=t0 + 990, limit=3), since[:3])


# -- unseen ------------------------------------------------------------------------------------------


def test_unseen_excludes_rated_and_seen_ordered_by_score(server):
    subj, fresh_subj = uid("reader"), uid("newcomer")
    t = now_ms() - HOUR
    sids = {k: create_story(server, fresh_url(), f"<p>{k}</p>", t + i)["id"] for i, k in enumerate("ABCDEF")}
    mine = set(sids.values())
    score = {"A": 20, "B": 16, "C": 12, "D": 8, "E": 18, "F": 14}
    for k, n in score.items():
        votes(server, sids[k], n)
    rate(server, subj, sids["E"], 1)    # E 19, rated up
    rate(server, subj, sids["F"], -1)   # F 13, rated down
    rate(server, subj, sids["D"], 0)    # D 8, seen
    score.update(E=19, F=13)

    def expect(keys):
        return [sids[k] for k in sorted(keys, key=lambda k: -score[k])]

    items = unseen(server, subj, "top", mine, [sids[k] for k in "ABC"])
    ids = [s["id"] for s in items]
    for k in "DEF":
        assert sids[k] not in ids, f"unseen lists story {k}, which the member rated"
    assert own_order(items, mine) == expect("ABC"), (own_order(items, mine), sids)
    for s in items:
        for k, sid in sids.items():
            if s["id"] == sid:
                assert s["score"] == score[k], (k, s)
    if server.backend == "rocksdb":  # this server's store is ours alone: the whole list is in order
        assert_scores_descending(items, "unseen?rank=top")

    # A vote by someone else reorders at once: C 12 -> 18, above B.
    votes(server, sids["C"], 6)
    score["C"] = 18
    items = unseen(server, subj, "top", mine, [sids[k] for k in "ABC"])
    assert own_order(items, mine) == expect("ABC") == [sids[k] for k in "ACB"]
    # Rating 0 (seen) removes a story at once.
    rate(server, subj, sids["A"], 0)
    items = unseen(server, subj, "top", mine, [sids[k] for k in "BC"])
    assert own_order(items, mine) == [sids["C"], sids["B"]]
    assert sids["A"] not in {s["id"] for s in items}

    # A member who rated nothing sees all six, by score.
    items = unseen(server, fresh_subj, "top", mine, list(mine))
    assert own_order(items, mine) == expect("ABCDEF"), (own_order(items, mine), sids, score)
    if server.backend == "rocksdb":
        assert_scores_descending(items, "unseen?rank=top")
    # limit
    body = get_list(server, f"/api/v1/members/{fresh_subj}/unseen", "stories", rank="top", limit=3)
    assert 1 <= len(body["stories"]) <= 3
    if server.backend == "rocksdb":
        assert_scores_descending(body["stories"], "unseen?rank=top&limit=3")


def test_unseen_hot(server):
    """rank=hot: Reddit-style, the score decays with the story's age. At equal votes the
    newer story is first; a much-upvoted story beats a slightly newer one with few votes,
    but not a new one when it is ten days older."""
    subj = uid("reader")
    # After every story the server has (and years ahead): near "now", every story created
    # in the last days by any test of any run on the shared cluster would outrank the
    # ten-day-old one, and the future-dated stories of the recent tests would outrank them
    # all. Reddit's formula orders by absolute time, so the future is as good a place as
    # any, and there nothing else competes.
    n = future_base(server, ahead=5 * YEAR_MS, margin=20 * DAY)
    spec = {  # key: (time, votes)
        "S1": (n - 2 * HOUR, 5),
        "S2": (n - 1 * HOUR, 5),
        "O": (n - 3 * HOUR, 30),
        "N": (n - 1 * HOUR - 60_000, 1),
        "V": (n - 10 * DAY, 30),
        "F": (n - 1 * HOUR - 120_000, 2),
    }
    sids = {k: create_story(server, fresh_url(), f"<p>{k}</p>", t)["id"] for k, (t, _) in spec.items()}
    mine = set(sids.values())
    for k, (_, v) in spec.items():
        votes(server, sids[k], v)
    for k, (t, v) in spec.items():
        got = get_story(server, sids[k])
        assert (got["time"], got["score"]) == (t, v), k

    items = unseen(server, subj, "hot", mine, list(mine))
    order = own_order(items, mine)
    pos = {k: order.index(sids[k]) if sids[k] in order else None for k in spec}
    assert None not in pos.values(), f"rank=hot lacks some of the stories: {pos}"
    assert pos["S2"] < pos["S1"], f"rank=hot: at equal votes the newer story must come first: {pos}"
    assert pos["O"] < pos["N"], f"rank=hot: 30 votes 2 h older must beat 1 vote: {pos}"
    assert pos["F"] < pos["V"], f"rank=hot: a 10-day-old story must lose to a fresh one despite 30 votes: {pos}"

    # rank=top ignores age: V (30) is above F (2).
    items = unseen(server, subj, "top", mine, list(mine))
    order = own_order(items, mine)
    assert order.index(sids["V"]) < order.index(sids["F"]), "rank=top must not decay with age"
    assert order.index(sids["O"]) < order.index(sids["S1"]) < order.index(sids["N"])

    # Rated stories leave the hot list too; votes move it at once.
    rate(server, subj, sids["S2"], 0)
    votes(server, sids["S1"], 20)  # S1: 25 votes, 2 h old
    items = unseen(server, subj, "hot", mine, [sids[k] for k in ("S1", "O", "N", "V", "F")])
    order = own_order(items, mine)
    assert sids["S2"] not in order
    assert order.index(sids["S1"]) < order.index(sids["N"])


# -- bad input -------------------------------------------------------------------------------------


def test_bad_rating_input_changes_nothing(server):
    s = create_story(server, fresh_url())
    sid = s["id"]
    subj = uid("subj")
    t = now_ms() - 5000
    rate(server, subj, sid, 1, t)
    before_story = get_story(server, sid)
    before_rating = get_rating(server, subj, sid).json()
    sess = requests.Session()
    bad_scores = [2, -2, 5, 1.5, 0.5, "1", "up", True, False, None, [1], {"v": 1}, 2 ** 40, -(2 ** 40)]
    for sc in bad_scores:
        r = put_rating(server, subj, sid, {"score": sc, "time": t + 100}, sess)
        assert_problem(r, 400, "score")
    assert_problem(put_rating(server, subj, sid, {"time": t + 100}, sess), 400, "score")
    for bad_t in ("yesterday", "1", 1.5, [1], True):
        r = put_rating(server, subj, sid, {"score": -1, "time": bad_t}, sess)
        assert_problem(r, 400, "time")
    for raw in (b"", b"{", b"[]", b"1", b"null", b"{\"score\": 1", b"\xff"):
        r = sess.put(f"{server.url}/api/v1/ratings/{subj}/{sid}", data=raw, timeout=T,
                     headers={"Content-Type": "application/json"})
        assert_problem(r, 400)
    # Bad subjects: 400 naming the subject, nothing stored for them.
    for bad in ("bad!id", "a b", "x" * 129, "caf\u00e9", "a,b"):
        r = sess.put(f"{server.url}/api/v1/ratings/{requests.utils.quote(bad)}/{sid}", json={"score": -1}, timeout=T)
        assert_problem(r, 400, "subject")
    assert get_story(server, sid, sess) == before_story, "a rejected rating changed the story"
    assert get_rating(server, subj, sid, sess).json() == before_rating, "a rejected rating changed the rating"
    assert triples(ratings_all(server, f"/api/v1/stories/{sid}/ratings")) == [(subj, sid, 1, t)]


@pytest.mark.parametrize("kind", ["subject", "all", "story", "top-rated", "unseen"])
def test_list_bad_params(server, kind):
    s = create_story(server, fresh_url())
    subj = uid("subj")
    path = {"subject": f"/api/v1/ratings/{subj}", "all": "/api/v1/ratings",
            "story": f"/api/v1/stories/{s['id']}/ratings", "top-rated": f"/api/v1/members/{subj}/top-rated",
            "unseen": f"/api/v1/members/{subj}/unseen"}[kind]
    cases = [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"limit": -5}, "limit"),
             ({"limit": "x"}, "limit")]
    if kind != "unseen":
        cases += [({"cursor": "garbage"}, "cursor"), ({"cursor": "!!!"}, "cursor")]
    if kind in ("subject", "all", "top-rated"):
        cases += [({"since": "yesterday"}, "since"), ({"since": "1.5"}, "since")]
    if kind == "unseen":
        cases += [({"rank": "best"}, "rank"), ({"rank": "TOP!"}, "rank")]
    sess = requests.Session()
    for params, field in cases:
        r = sess.get(server.url + path, params=params, timeout=T)
        assert_problem(r, 400, field)
    for lim in (1, 1000):
        r = sess.get(server.url + path, params={"limit": lim}, timeout=T)
        assert r.status_code == 200, f"GET {path}?limit={lim}: {r.status_code} {r.text[:200]}"


# -- members ----------------------------------------------------------------------------------------


def test_members(server):
    mid = uid("feed")
    api = f"{server.url}/api/v1/members/{mid}"
    assert_problem(requests.get(api, timeout=T), 404)
    r = requests.put(api, json={"url": "https://feeds.example.com/rss", "score": 5}, timeout=T)
    assert r.status_code == 200, r.text
    r = requests.get(api, timeout=T)
    assert r.status_code == 200, r.text
    assert has(r.json(), id=mid, url="https://feeds.example.com/rss", score=5), r.json()
    r = requests.put(api, json={"url": "https://example.org/u/" + mid, "score": -3}, timeout=T)
    assert r.status_code == 200, r.text
    got = requests.get(api, timeout=T).json()
    assert has(got, id=mid, url="https://example.org/u/" + mid, score=-3), got


def test_members_bad_input_changes_nothing(server):
    mid = uid("user")
    api = f"{server.url}/api/v1/members/{mid}"
    good = {"url": "https://example.com/people/" + mid, "score": 7}
    assert requests.put(api, json=good, timeout=T).status_code == 200
    sess = requests.Session()
    for body, field in (({"url": "ftp://x", "score": 1}, "url"), ({"url": "not a url", "score": 1}, "url"),
                        ({"url": 5, "score": 1}, "url"), ({"url": good["url"], "score": "x"}, "score"),
                        ({"url": good["url"], "score": 1.5}, "score"), ({"url": good["url"], "score": [1]}, "score")):
        assert_problem(sess.put(api, json=body, timeout=T), 400, field)
    for raw in (b"", b"{", b"[]"):
        assert_problem(sess.put(api, data=raw, timeout=T, headers={"Content-Type": "application/json"}), 400)
    got = sess.get(api, timeout=T).json()
    assert has(got, id=mid, **good), f"a rejected member PUT changed the member: {got}"
    for bad in ("bad!id", "a b", "x" * 129):
        r = sess.put(f"{server.url}/api/v1/members/{requests.utils.quote(bad)}", json=good, timeout=T)
        assert_problem(r, 400)


# -- auth ----------------------------------------------------------------------------------------------


def test_auth_ratings(secure_server):
    srv = secure_server
    admin = srv.session(srv.admin_key)
    alice_id, bob_id = uid("alice"), uid("bob")
    alice = srv.session(srv.token(alice_id))
    r = post_story(srv, fresh_url(), "<p>auth</p>", session=admin)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]

    # No or bad credentials: 401, nothing stored.
    assert_problem(put_rating(srv, alice_id, sid, {"score": 1}), 401)
    assert_problem(put_rating(srv, alice_id, sid, {"score": 1}, headers={"Authorization": "Bearer nope"}), 401)
    assert_problem(get_rating(srv, alice_id, sid, admin), 404)

    # A user rates as itself only.
    r = put_rating(srv, alice_id, sid, {"score": 1}, alice)
    assert r.status_code == 200, f"a user token rating as itself: {r.status_code} {r.text[:200]}"
    r = put_rating(srv, bob_id, sid, {"score": -1}, alice)
    assert_problem(r, 403)
    assert_problem(get_rating(srv, bob_id, sid, admin), 404)
    r = get_story(srv, sid, admin)
    assert r["score"] == 1, "a 403 rating changed the score"
    # The admin rates as anyone.
    r = put_rating(srv, bob_id, sid, {"score": 1}, admin)
    assert r.status_code == 200, r.text
    assert get_story(srv, sid, admin)["score"] == 2
    # A user cannot overwrite another's rating either.
    assert_problem(put_rating(srv, bob_id, sid, {"score": -1}, alice), 403)
    assert get_rating(srv, bob_id, sid, admin).json()["score"] == 1

    # Reads need a valid token.
    for path in (f"/api/v1/ratings/{alice_id}/{sid}", f"/api/v1/ratings/{alice_id}", "/api/v1/ratings",
                 f"/api/v1/stories/{sid}/ratings", f"/api/v1/members/{alice_id}/top-rated",
                 f"/api/v1/members/{alice_id}/unseen"):
        assert_problem(requests.get(srv.url + path, timeout=T), 401)
        r = alice.get(srv.url + path, timeout=T)
        assert r.status_code == 200, f"GET {path} as the user: {r.status_code} {r.text[:200]}"
    # Members need a token.
    assert_problem(requests.put(f"{srv.url}/api/v1/members/{alice_id}", json={"url": "https://a.example.com/", "score": 1},
                                timeout=T), 401)
    assert_problem(requests.get(f"{srv.url}/api/v1/members/{alice_id}", timeout=T), 401)


# -- restart -----------------------------------------------------------------------------------------


def test_stories_and_ratings_survive_restart(herald, backend):
    """Stories, URLs, ratings, scores and rankings are in the store, not the process."""
    h = herald.start(backend)
    p = f"/{uid('r')}/story"
    first = f"https://news.example.com{p}"
    alias = fresh_url("mirror.example.com")
    s = create_story(h, first, "<p>durable ünïcode</p>", now_ms() - HOUR)
    sid = s["id"]
    assert requests.post(f"{h.url}/api/v1/stories/{sid}/urls", json={"url": alias, "preferred": True},
                         timeout=T).status_code == 200
    subj, reader = uid("subj"), uid("reader")
    rate(h, subj, sid, 1, now_ms() - 1000)
    voters = votes(h, sid, 3)
    rate(h, reader, sid, 0)
    mid = uid("member")
    assert requests.put(f"{h.url}/api/v1/members/{mid}", json={"url": "https://feeds.example.com/a", "score": 3},
                        timeout=T).status_code == 200
    before = get_story(h, sid)
    before_ratings = ratings_all(h, f"/api/v1/stories/{sid}/ratings")
    assert before["score"] == 4 and before["url"] == alias

    h.stop()
    h.start()
    assert get_story(h, sid) == before
    r = requests.get(f"{h.url}/api/v1/stories", params={"url": f"http://www.news.example.com{p}/"}, timeout=T)
    assert r.status_code == 200 and r.json()["id"] == sid
    assert ratings_all(h, f"/api/v1/stories/{sid}/ratings") == before_ratings
    assert len(before_ratings) == 5 and {x["subject"] for x in before_ratings} == {subj, reader, *voters}
    assert sid in [x["id"] for x in top_rated(h, subj)]
    items = unseen(h, reader, "top", {sid}, [])
    assert sid not in [x["id"] for x in items]
    if backend == "rocksdb":  # a fresh data dir: the ranking holds this test's story alone
        items = unseen(h, uid("fresh"), "top", {sid}, [sid])
        assert [x["id"] for x in items] == [sid]
    r = requests.get(f"{h.url}/api/v1/members/{mid}", timeout=T)
    assert r.status_code == 200 and has(r.json(), id=mid, url="https://feeds.example.com/a", score=3), r.text
    # And it keeps counting after the restart.
    rate(h, subj, sid, -1)
    assert get_story(h, sid)["score"] == 2
