"""Social reading (API.md "Social reading"; seed 000, RockMelt).

Users opt in (default out) to share the URLs they read on sites the admin selected;
friends-reads says, for up to 100 URLs, which of a user's friends (mutual follows who
share) read each, and how many people did. Popular, trending and friends-popular list
URLs by readers.

Every test runs on both backends. Sites, popular and trending are global, and the redis
backend is a cluster that outlives the run, so every test uses its own site (a uuid
domain), its own users, and filters global lists to its own URLs.
"""

import json
import time
import uuid

import pytest
import requests

from conftest import assert_problem, run_cli, uid

T = 30  # request timeout, seconds
MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def now_ms():
    return int(time.time() * 1000)


# -- helpers --------------------------------------------------------------------


def fresh_site():
    """A unique domain (a valid identifier and host)."""
    return f"r{uuid.uuid4().hex[:16]}.example"


def select(server, domain, session=None):
    r = (session or requests).put(f"{server.url}/api/v1/reading/sites/{domain}", timeout=T)
    assert r.status_code == 200, f"PUT site {domain}: {r.status_code} {r.text}"
    return r.json()


def share(server, user, on=True, session=None):
    r = (session or requests).put(f"{server.url}/api/v1/users/{user}/reading", json={"share": on}, timeout=T)
    assert r.status_code == 200, f"PUT {user}/reading {on}: {r.status_code} {r.text}"
    assert r.json() == {"share": on}
    return r


def post_read(server, user, url, t=None, session=None):
    body = {"url": url}
    if t is not None:
        body["time"] = t
    return (session or requests).post(f"{server.url}/api/v1/users/{user}/reads", json=body, timeout=T)


def read(server, user, url, t=None, session=None):
    """Record a read that must be recorded."""
    r = post_read(server, user, url, t, session)
    assert r.status_code == 202, f"{user} read {url}: {r.status_code} {r.text}"
    assert r.json() == {"recorded": True}
    return r


def not_recorded(server, user, url, reason, t=None):
    r = post_read(server, user, url, t)
    assert r.status_code == 200, f"{user} read {url}: {r.status_code} {r.text}"
    assert r.json() == {"recorded": False, "reason": reason}, r.text


def follow(server, a, b, session=None):
    r = (session or requests).put(f"{server.url}/api/v1/users/{a}/follows/{b}", timeout=T)
    assert r.status_code == 200, f"{a} follows {b}: {r.status_code} {r.text}"


def befriend(server, a, b):
    follow(server, a, b)
    follow(server, b, a)


def post_friends_reads(server, user, urls, friends=None, session=None):
    body = {"urls": urls}
    if friends is not None:
        body["friends"] = friends
    return (session or requests).post(f"{server.url}/api/v1/users/{user}/friends-reads", json=body, timeout=T)


def friends_reads(server, user, urls, friends=None, session=None):
    r = post_friends_reads(server, user, urls, friends, session)
    assert r.status_code == 200, f"friends-reads of {user}: {r.status_code} {r.text}"
    answer = r.json()["urls"]
    assert set(answer) == set(urls), f"the answer is keyed by the URLs as sent: {sorted(answer)} vs {sorted(set(urls))}"
    return answer


def unique_keys(text):
    """The JSON text parsed, failing on an object that repeats a key (json.loads keeps the last)."""
    def pairs(items):
        keys = [k for k, _ in items]
        assert len(keys) == len(set(keys)), f"repeated keys in {keys}"
        return dict(items)
    return json.loads(text, object_pairs_hook=pairs)


def users(n, prefix="u"):
    return [uid(prefix) for _ in range(n)]


def sharing_users(server, n, prefix="u"):
    us = users(n, prefix)
    for u in us:
        share(server, u)
    return us


def listing(server, path, **params):
    r = requests.get(f"{server.url}{path}", params=params, timeout=T)
    assert r.status_code == 200, f"GET {path} {params}: {r.status_code} {r.text}"
    return r.json()


def mine(items, site):
    """The items of a global list that are URLs of this test's site."""
    return [i for i in items if i["url"].startswith(f"https://{site}/")]


# -- sites and sharing ------------------------------------------------------------


def test_sites_are_admin_state_and_canonical(server):
    site = fresh_site()
    got = select(server, "WWW." + site.upper())
    assert got == {"site": site, "selected": True, "new": True}
    assert select(server, site)["new"] is False
    assert site in listing(server, "/api/v1/reading/sites")["sites"]
    sites = listing(server, "/api/v1/reading/sites")["sites"]
    assert sites == sorted(sites)
    r = requests.delete(f"{server.url}/api/v1/reading/sites/{site}", timeout=T)
    assert r.status_code == 200 and r.json() == {"site": site, "selected": False, "was_selected": True}, r.text
    assert site not in listing(server, "/api/v1/reading/sites")["sites"]
    r = requests.delete(f"{server.url}/api/v1/reading/sites/{site}", timeout=T)
    assert r.json()["was_selected"] is False
    assert_problem(requests.put(f"{server.url}/api/v1/reading/sites/a..b", timeout=T), 400, "domain")
    assert_problem(requests.put(f"{server.url}/api/v1/reading/sites/{'a' * 64}.example", timeout=T), 400,
                   "domain")  # a label over 63 bytes


def test_sharing_defaults_off(server):
    u = uid()
    assert listing(server, f"/api/v1/users/{u}/reading") == {"share": False}
    share(server, u, True)
    assert listing(server, f"/api/v1/users/{u}/reading") == {"share": True}
    share(server, u, False)
    assert listing(server, f"/api/v1/users/{u}/reading") == {"share": False}
    r = requests.put(f"{server.url}/api/v1/users/{u}/reading", json={"share": "yes"}, timeout=T)
    assert_problem(r, 400, "share")
    r = requests.put(f"{server.url}/api/v1/users/{u}/reading", json={"share": True, "x": 1}, timeout=T)
    assert_problem(r, 400, "x")
    assert listing(server, f"/api/v1/users/{u}/reading") == {"share": False}, "a rejected request changes nothing"


def test_reads_say_why_they_were_not_recorded(server):
    site, other = fresh_site(), fresh_site()
    select(server, site)
    u = uid()
    # not opted in comes first, whatever the site
    not_recorded(server, u, f"https://{site}/a", "not_opted_in")
    not_recorded(server, u, f"https://{other}/a", "not_opted_in")
    share(server, u)
    read(server, u, f"https://{site}/a")
    read(server, u, f"http://www.news.{site}/b")  # subdomains of a selected site count
    not_recorded(server, u, f"https://{other}/a", "site_not_selected")
    not_recorded(server, u, f"https://{site}.evil.example/a", "site_not_selected")
    not_recorded(server, u, f"https://{site}/old", "expired", t=now_ms() - 31 * DAY)
    share(server, u, False)
    not_recorded(server, u, f"https://{site}/a", "not_opted_in")
    requests.delete(f"{server.url}/api/v1/reading/sites/{site}", timeout=T)
    share(server, u, True)
    not_recorded(server, u, f"https://{site}/c", "site_not_selected")


def test_read_validation(server):
    site = fresh_site()
    select(server, site)
    u = uid()
    share(server, u)
    base = f"{server.url}/api/v1/users/{u}/reads"
    assert_problem(requests.post(base, json={}, timeout=T), 400, "url")
    assert_problem(requests.post(base, json={"url": 7}, timeout=T), 400, "url")
    assert_problem(requests.post(base, json={"url": "ftp://x.example/"}, timeout=T), 400, "url")
    assert_problem(requests.post(base, json={"url": f"https://{site}/a", "time": -1}, timeout=T), 400, "time")
    assert_problem(requests.post(base, json={"url": f"https://{site}/a", "when": 1}, timeout=T), 400, "when")
    assert_problem(requests.post(base, data="not json", timeout=T), 400)
    # a time in the future counts as now
    read(server, u, f"https://{site}/future", t=now_ms() + DAY)


# -- friends-reads ------------------------------------------------------------------


def test_friends_reads_reveals_friends_who_share_and_folds_variants(server):
    site = fresh_site()
    select(server, site)
    me, f1, f2, f3, stranger, fan = sharing_users(server, 6)
    for f in (f1, f2, f3):
        befriend(server, me, f)
    follow(server, fan, me)  # one-way: not a friend
    follow(server, me, stranger)  # one-way the other way
    story = f"https://{site}/story"
    read(server, f1, f"http://www.{site}/story/?utm_source=feed")
    read(server, f3, f"https://{site.upper()}:443/story/index.html#comments")
    read(server, stranger, story)
    read(server, fan, story)
    read(server, f2, f"https://{site}/other")
    variants = [f"HTTP://{site}/story", story, f"https://www.{site}/story/", f"https://{site}/other",
                f"https://{site}/unread"]
    answer = friends_reads(server, me, variants)
    for v in variants[:3]:
        assert sorted(answer[v]["friends"]) == sorted([f1, f3]), (v, answer[v])
        assert answer[v]["readers"] == 4, "readers counts everyone who shares, friends or not"
        assert answer[v]["url"] == story
    assert answer[variants[3]]["friends"] == [f2]
    assert answer[variants[3]]["readers"] == 1
    assert answer[variants[4]] == {"url": f"https://{site}/unread", "friends": [], "readers": 0}
    # a user who does not share has nothing recorded; a friend not sharing reveals nothing
    quiet = uid()
    befriend(server, me, quiet)
    not_recorded(server, quiet, story, "not_opted_in")
    assert quiet not in friends_reads(server, me, [story])[story]["friends"]
    # the same URL twice is one key, written once
    r = post_friends_reads(server, me, [story, story])
    assert r.status_code == 200 and list(unique_keys(r.text)["urls"]) == [story]
    # a URL whose text JSON escapes is answered under that text
    odd = f'https://{site}/story?q="caf\u00e9"'
    answer = unique_keys(post_friends_reads(server, me, [odd, story]).text)["urls"]
    assert list(answer) == [odd, story], list(answer)
    assert sorted(answer[story]["friends"]) == sorted([f1, f3])


def test_opting_out_hides_at_once(server):
    site = fresh_site()
    select(server, site)
    me, f = sharing_users(server, 2)
    befriend(server, me, f)
    url = f"https://{site}/a"
    read(server, f, url)
    assert friends_reads(server, me, [url])[url]["friends"] == [f]
    share(server, f, False)
    got = friends_reads(server, me, [url])[url]
    assert got == {"url": url, "friends": [], "readers": 0}, "opting out hides and deletes the reads at once"
    share(server, f, True)
    assert friends_reads(server, me, [url])[url]["friends"] == [], "opting in again does not bring them back"
    read(server, f, url)
    assert friends_reads(server, me, [url])[url]["friends"] == [f]


def test_popular_page_answered_from_a_packed_set(server):
    """A page read by many more people than the user has friends is answered from a
    packed set (with three friends, the page's set of readers; tests/unit/core/test_reading_friends.c
    forces each side): the same answer, and opt-out still hides at once."""
    site = fresh_site()
    select(server, site)
    url = f"https://{site}/hit"
    crowd = sharing_users(server, 70, "crowd")
    for u in crowd:
        read(server, u, url)
    me, f, g = sharing_users(server, 3)
    befriend(server, me, f)
    befriend(server, me, g)
    befriend(server, me, crowd[5])
    read(server, f, url)
    read(server, g, f"https://{site}/other")
    answer = friends_reads(server, me, [url, f"https://{site}/other"])
    assert sorted(answer[url]["friends"]) == sorted([f, crowd[5]])
    assert answer[url]["readers"] == 71
    assert answer[f"https://{site}/other"]["friends"] == [g]
    share(server, crowd[5], False)
    answer = friends_reads(server, me, [url])
    assert answer[url]["friends"] == [f]
    assert answer[url]["readers"] == 70


def test_admin_friend_lists(server):
    site = fresh_site()
    select(server, site)
    me, a, b, silent = users(4)
    for u in (a, b):
        share(server, u)
    url = f"https://{site}/x"
    read(server, a, url)
    read(server, b, url)
    answer = friends_reads(server, me, [url], friends=[b, silent, a])
    assert answer[url]["friends"] == [b, a], "the admin's list, in its order; users not sharing stay hidden"
    assert friends_reads(server, me, [url], friends=[])[url]["friends"] == []
    assert friends_reads(server, me, [url])[url]["friends"] == [], "without a list: the graph (no friends)"
    assert_problem(post_friends_reads(server, me, [url], friends=["bad id!"]), 400, "friends")
    assert_problem(post_friends_reads(server, me, [url], friends="a"), 400, "friends")
    assert_problem(post_friends_reads(server, me, [url], friends=[uid() for _ in range(5001)]), 400, "friends")
    assert friends_reads(server, me, [url], friends=[a] * 2 + [uid() for _ in range(4998)])[url]["friends"] == [a]


def test_friends_reads_limits(server):
    site = fresh_site()
    me = uid()
    base = f"{server.url}/api/v1/users/{me}/friends-reads"
    urls = [f"https://{site}/{i}" for i in range(101)]
    assert_problem(requests.post(base, json={"urls": urls}, timeout=T), 400, "urls")
    assert friends_reads(server, me, urls[:100])
    assert_problem(requests.post(base, json={"urls": []}, timeout=T), 400, "urls")
    assert_problem(requests.post(base, json={}, timeout=T), 400, "urls")
    assert_problem(requests.post(base, json={"urls": f"https://{site}/"}, timeout=T), 400, "urls")
    assert_problem(requests.post(base, json={"urls": [f"https://{site}/", 3]}, timeout=T), 400, "urls[1]")
    p = assert_problem(requests.post(base, json={"urls": [f"https://{site}/", "mailto:x@y.z"]}, timeout=T), 400,
                       "urls[1]")
    assert "scheme" in p["detail"] or "http" in p["detail"], p
    assert_problem(requests.post(base, json={"urls": [f"https://{site}/"], "limit": 3}, timeout=T), 400, "limit")
    assert_problem(requests.post(base, data=b"[1]", timeout=T), 400)
    assert_problem(requests.post(f"{server.url}/api/v1/users/bad!id/friends-reads", json={"urls": urls[:1]},
                                 timeout=T), 400)


# -- popular, trending, friends-popular ------------------------------------------------


def crowd_reads(server, url, n, t, prefix="c"):
    for u in sharing_users(server, n, prefix):
        read(server, u, url, t)


def test_popular_windows(server):
    site = fresh_site()
    select(server, site)
    now = now_ms()
    x, y, z, old = (f"https://{site}/{k}" for k in ("x", "y", "z", "old"))
    crowd_reads(server, x, 5, now - 3 * HOUR)
    crowd_reads(server, y, 3, now - 20 * MINUTE)
    crowd_reads(server, z, 4, now - 2 * DAY)
    crowd_reads(server, old, 6, now - 9 * DAY)

    def top(window):
        got = listing(server, "/api/v1/reading/popular", window=window, limit=1000)
        assert got["window"] == window
        return [(i["url"], i["readers"]) for i in mine(got["urls"], site)]

    assert top("1h") == [(y, 3)]
    assert top("1d") == [(x, 5), (y, 3)]
    assert top("7d") == [(x, 5), (z, 4), (y, 3)]
    default = listing(server, "/api/v1/reading/popular", limit=1000)
    assert default["window"] == "1d"
    assert_problem(requests.get(f"{server.url}/api/v1/reading/popular?window=2h", timeout=T), 400, "window")
    assert_problem(requests.get(f"{server.url}/api/v1/reading/popular?limit=0", timeout=T), 400, "limit")
    assert_problem(requests.get(f"{server.url}/api/v1/reading/popular?limit=1001", timeout=T), 400, "limit")
    got = listing(server, "/api/v1/reading/popular", window="7d", limit=1)["urls"]
    assert len(got) <= 1


def test_trending_ranks_by_rise_against_own_baseline(server):
    site = fresh_site()
    select(server, site)
    now = now_ms()
    steady, new, rising, single = (f"https://{site}/{k}" for k in ("steady", "new", "rising", "single"))
    for h in range(2, 23):  # 3 an hour for the 21 hours before, then 2 in the last hour
        crowd_reads(server, steady, 3, now - h * HOUR)
    crowd_reads(server, steady, 2, now - 10 * MINUTE)
    crowd_reads(server, new, 4, now - 10 * MINUTE)
    crowd_reads(server, rising, 2, now - 5 * HOUR)
    crowd_reads(server, rising, 7, now - 10 * MINUTE)
    crowd_reads(server, single, 1, now - 10 * MINUTE)
    got = listing(server, "/api/v1/reading/trending", limit=1000)
    assert got["window"] == "1h"
    items = mine(got["urls"], site)
    assert [i["url"] for i in items] == [rising, new], items
    r, n = items
    assert r["readers"] == 7 and abs(r["baseline"] - 2 / 23) < 1e-9
    assert abs(r["score"] - (7 - 2 / 23) / (1 + 2 / 23) ** 0.5) < 1e-9
    assert n["readers"] == 4 and n["baseline"] == 0 and abs(n["score"] - 4) < 1e-9
    assert_problem(requests.get(f"{server.url}/api/v1/reading/trending?limit=x", timeout=T), 400, "limit")


def test_friends_popular(server):
    site = fresh_site()
    select(server, site)
    me, a, b, c, d, other = sharing_users(server, 6)
    for f in (a, b, c, d):
        befriend(server, me, f)
    now = now_ms()
    u1, u2, u3, u4 = (f"https://{site}/{k}" for k in range(1, 5))
    read(server, a, u1, now - 10 * MINUTE)
    read(server, b, u1, now - 20 * MINUTE)
    read(server, c, u1, now - 2 * DAY)
    read(server, a, u2, now - 5 * MINUTE)
    read(server, d, u2, now - 30 * MINUTE)
    read(server, d, u3, now - MINUTE)
    read(server, other, u3)
    read(server, other, u4)
    got = listing(server, f"/api/v1/users/{me}/friends-popular")
    assert got["window"] == "1d"
    assert [(i["url"], sorted(i["friends"]), i["readers"]) for i in got["urls"]] == [
        (u2, sorted([a, d]), 2), (u1, sorted([a, b]), 3), (u3, [d], 2)]
    got = listing(server, f"/api/v1/users/{me}/friends-popular", window="7d", limit=1)
    assert [(i["url"], sorted(i["friends"])) for i in got["urls"]] == [(u1, sorted([a, b, c]))]
    got = listing(server, f"/api/v1/users/{me}/friends-popular", window="1h")
    assert [i["url"] for i in got["urls"]] == [u2, u1, u3]
    share(server, d, False)
    got = listing(server, f"/api/v1/users/{me}/friends-popular")
    assert [(i["url"], sorted(i["friends"]), i["readers"]) for i in got["urls"]] == [
        (u1, sorted([a, b]), 3), (u2, [a], 1)], "an opted-out friend's reads are gone"
    assert listing(server, f"/api/v1/users/{uid()}/friends-popular") == {"window": "1d", "urls": []}
    assert_problem(requests.get(f"{server.url}/api/v1/users/{me}/friends-popular?window=1y", timeout=T), 400,
                   "window")


# -- expiry -------------------------------------------------------------------------


def test_reads_expire_after_reading_ttl(herald, backend):
    h = herald.start(backend, "--set", "reading_ttl=2s")
    site = fresh_site()
    select(h, site)
    me, f = users(2)
    share(h, me)
    share(h, f)
    befriend(h, me, f)
    url = f"https://{site}/a"
    read(h, f, url)
    assert friends_reads(h, me, [url])[url] == {"url": url, "friends": [f], "readers": 1}
    assert [i["url"] for i in listing(h, f"/api/v1/users/{me}/friends-popular", window="1h")["urls"]] == [url]
    not_recorded(h, f, f"https://{site}/b", "expired", t=now_ms() - 2500)
    time.sleep(2.5)
    assert friends_reads(h, me, [url])[url] == {"url": url, "friends": [], "readers": 0}
    assert listing(h, f"/api/v1/users/{me}/friends-popular", window="1h")["urls"] == []
    read(h, f, url)
    assert friends_reads(h, me, [url])[url]["friends"] == [f], "a new read counts again"


def test_bad_reading_ttl_is_refused(tmp_path):
    r = run_cli("serve", "--listen", "127.0.0.1:0", "--store", f"rocksdb:{tmp_path / 'data'}", "--set",
                "reading_ttl=0")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "reading_ttl" in r.stderr


# -- access ---------------------------------------------------------------------------


def test_user_tokens_act_only_for_themselves(secure_server):
    srv = secure_server
    admin = srv.session(srv.admin_key)
    site = fresh_site()
    me, friend, other = users(3)
    me_s, friend_s, other_s = (srv.session(srv.token(u)) for u in (me, friend, other))
    # sites: admin only to change, any token to list
    assert_problem(me_s.put(f"{srv.url}/api/v1/reading/sites/{site}", timeout=T), 403)
    select(srv, site, session=admin)
    assert site in me_s.get(f"{srv.url}/api/v1/reading/sites", timeout=T).json()["sites"]
    assert_problem(requests.get(f"{srv.url}/api/v1/reading/sites", timeout=T), 401)
    assert_problem(me_s.delete(f"{srv.url}/api/v1/reading/sites/{site}", timeout=T), 403)
    # sharing and reads: only as oneself
    share(srv, me, session=me_s)
    share(srv, friend, session=friend_s)
    assert_problem(other_s.put(f"{srv.url}/api/v1/users/{me}/reading", json={"share": False}, timeout=T), 403)
    assert_problem(other_s.get(f"{srv.url}/api/v1/users/{me}/reading", timeout=T), 403)
    url = f"https://{site}/a"
    assert_problem(post_read(srv, friend, url, session=other_s), 403)
    read(srv, friend, url, session=friend_s)
    follow(srv, me, friend, session=me_s)
    follow(srv, friend, me, session=friend_s)
    # friends-reads: one's own friends only, and only the admin passes a list
    assert friends_reads(srv, me, [url], session=me_s)[url]["friends"] == [friend]
    assert_problem(post_friends_reads(srv, me, [url], session=other_s), 403)
    assert_problem(post_friends_reads(srv, me, [url], friends=[friend], session=me_s), 403, "friends")
    assert friends_reads(srv, other, [url], friends=[friend], session=admin)[url]["friends"] == [friend]
    assert_problem(post_friends_reads(srv, me, [url], session=requests.Session()), 401)
    assert_problem(other_s.get(f"{srv.url}/api/v1/users/{me}/friends-popular", timeout=T), 403)
    assert me_s.get(f"{srv.url}/api/v1/users/{me}/friends-popular", timeout=T).status_code == 200
    # popular and trending: any token
    for path in ("/api/v1/reading/popular", "/api/v1/reading/trending"):
        assert other_s.get(srv.url + path, timeout=T).status_code == 200
        assert_problem(requests.get(srv.url + path, timeout=T), 401)
