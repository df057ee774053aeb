"""Reactions (API.md "Reactions"): likes once per user, comments that repeat,
counts in single reads and in every feed page (own_reactions for the reader),
deletes that drop counts at once, the two lists, exact counts when many
users like one activity at once through two servers on one store, tokens
acting only as their user, bad input, and an activity's delete taking its
reactions along."""

import threading
import time

import requests

from conftest import assert_problem, uid
from test_feeds import eventually, follow, page, post

API = "/api/v1"


def react(s, h, aid, user, kind, data=None, status=201):
    body = {"user": user, "kind": kind}
    if data is not None:
        body["data"] = data
    r = s.post(f"{h.url}{API}/activities/{aid}/reactions", json=body)
    assert r.status_code == status, r.text
    return r.json()


def counts(s, h, aid):
    r = s.get(f"{h.url}{API}/activities/{aid}")
    assert r.status_code == 200, r.text
    return r.json().get("reaction_counts", {})


def test_like_once_comment_often_and_delete(server):
    s = server.session()
    a, b, c = uid("ann"), uid("bob"), uid("cat")
    act = post(s, server, actor=a, verb="photo")
    assert "reaction_counts" not in act
    like = react(s, server, act["id"], b, "like")
    assert like["id"].startswith(act["id"] + "-")
    assert set(like) == {"id", "activity_id", "user", "kind", "time"}
    assert like["activity_id"] == act["id"] and like["user"] == b and like["kind"] == "like"
    again = react(s, server, act["id"], b, "like", data={"x": 1}, status=200)
    assert again == like
    react(s, server, act["id"], c, "like")
    c1 = react(s, server, act["id"], b, "comment", data={"text": "nice"})
    assert c1["data"] == {"text": "nice"}
    react(s, server, act["id"], b, "comment", data={"text": "again"})
    assert counts(s, server, act["id"]) == {"like": 2, "comment": 2}

    r = s.delete(f"{server.url}{API}/reactions/{like['id']}")
    assert r.status_code == 200 and r.json() == {"deleted": True}
    assert counts(s, server, act["id"]) == {"like": 1, "comment": 2}
    assert_problem(s.delete(f"{server.url}{API}/reactions/{like['id']}"), 404)
    relike = react(s, server, act["id"], b, "like")
    assert relike["time"] >= like["time"]
    assert counts(s, server, act["id"]) == {"like": 2, "comment": 2}


def test_lists_newest_first_with_kind_and_cursor(server):
    s = server.session()
    a, b, c = uid("ann"), uid("bob"), uid("cat")
    x = post(s, server, actor=a, verb="post")
    y = post(s, server, actor=a, verb="post")
    made = [react(s, server, x["id"], b, "like"),
            react(s, server, x["id"], c, "comment", data="hi"),
            react(s, server, y["id"], b, "comment", data="yo")]
    for m in made:
        time.sleep(0.002)
    body = page(s, f"{server.url}{API}/activities/{x['id']}/reactions", limit=1)
    assert [r["user"] for r in body["reactions"]] == [c] and "next_cursor" in body
    body = page(s, f"{server.url}{API}/activities/{x['id']}/reactions", limit=1, cursor=body["next_cursor"])
    assert [r["user"] for r in body["reactions"]] == [b] and "next_cursor" not in body
    body = page(s, f"{server.url}{API}/activities/{x['id']}/reactions", kind="like")
    assert [r["id"] for r in body["reactions"]] == [made[0]["id"]]
    body = page(s, f"{server.url}{API}/users/{b}/reactions")
    assert [r["id"] for r in body["reactions"]] == [made[2]["id"], made[0]["id"]]
    body = page(s, f"{server.url}{API}/users/{b}/reactions", kind="comment")
    assert [r["data"] for r in body["reactions"]] == ["yo"]


def test_pages_carry_counts_and_the_readers_own(server):
    s = server.session()
    a, r1, other = uid("ann"), uid("reader"), uid("zed")
    follow(s, server, r1, a)
    act = post(s, server, actor=a, verb="post")
    eventually(lambda: page(s, f"{server.url}{API}/users/{r1}/timeline")["activities"])
    first = page(s, f"{server.url}{API}/users/{r1}/timeline")["activities"][0]
    assert first["own_reactions"] == [] and "reaction_counts" not in first
    react(s, server, act["id"], r1, "like")
    react(s, server, act["id"], other, "comment", data="hey")
    first = page(s, f"{server.url}{API}/users/{r1}/timeline")["activities"][0]
    assert first["reaction_counts"] == {"like": 1, "comment": 1}
    assert first["own_reactions"] == ["like"]
    own = page(s, f"{server.url}{API}/users/{a}/feed")["activities"][0]
    assert own["reaction_counts"] == {"like": 1, "comment": 1} and "own_reactions" not in own
    theirs = page(s, f"{server.url}{API}/users/{a}/feed", reader=other)["activities"][0]
    assert theirs["own_reactions"] == ["comment"]
    q = page(s, f"{server.url}{API}/activities", actor=a, reader=r1)["activities"][0]
    assert q["own_reactions"] == ["like"]


def test_deleting_the_activity_takes_its_reactions(server):
    s = server.session()
    a, b = uid("ann"), uid("bob")
    gone = post(s, server, actor=a, verb="post")
    kept = post(s, server, actor=a, verb="post")
    react(s, server, gone["id"], b, "like")
    c = react(s, server, gone["id"], b, "comment", data="x")
    react(s, server, kept["id"], b, "like")
    assert s.delete(f"{server.url}{API}/activities/{gone['id']}").status_code == 200
    body = page(s, f"{server.url}{API}/users/{b}/reactions")
    assert [r["activity_id"] for r in body["reactions"]] == [kept["id"]]
    assert_problem(s.get(f"{server.url}{API}/activities/{gone['id']}/reactions"), 404)
    assert_problem(s.post(f"{server.url}{API}/activities/{gone['id']}/reactions",
                          json={"user": b, "kind": "like"}), 404)
    eventually(lambda: s.delete(f"{server.url}{API}/reactions/{c['id']}").status_code == 404)


def test_bad_input_is_4xx_naming_the_field_and_changes_nothing(server):
    s = server.session()
    a, b = uid("ann"), uid("bob")
    act = post(s, server, actor=a, verb="post")
    url = f"{server.url}{API}/activities/{act['id']}/reactions"
    assert_problem(s.post(url, json={"user": b}), 400, "kind")
    assert_problem(s.post(url, json={"kind": "like"}), 400, "user")
    assert_problem(s.post(url, json={"user": b, "kind": "li ke"}), 400, "kind")
    assert_problem(s.post(url, json={"user": b, "kind": "k" * 65}), 400, "kind")
    assert_problem(s.post(url, json={"user": b, "kind": "like", "extra": 1}), 400, "extra")
    assert_problem(s.post(url, data="not json"), 400)
    assert_problem(s.post(url, json={"user": b, "kind": "comment", "data": "x" * 9000}), 413, "data")
    assert_problem(s.post(f"{server.url}{API}/activities/0000000000000000000a/reactions",
                          json={"user": b, "kind": "like"}), 404)
    assert_problem(s.get(f"{server.url}{API}/users/{a}/feed", params={"reader": "bad reader"}), 400, "reader")
    assert_problem(s.get(url, params={"kind": "a b"}), 400, "kind")
    assert_problem(s.delete(f"{server.url}{API}/reactions/nope"), 404)
    assert counts(s, server, act["id"]) == {}
    assert page(s, url)["reactions"] == []


def test_tokens_act_only_as_their_user(secure_server):
    h = secure_server
    a, b, c = uid("ann"), uid("bob"), uid("cat")
    admin = requests.Session()
    admin.headers["Authorization"] = "Bearer " + h.admin_key
    act = post(admin, h, actor=a, verb="post")
    bob = requests.Session()
    bob.headers["Authorization"] = "Bearer " + h.token(b)
    url = f"{h.url}{API}/activities/{act['id']}/reactions"
    assert_problem(bob.post(url, json={"user": c, "kind": "like"}), 403)
    mine = bob.post(url, json={"user": b, "kind": "like"})
    assert mine.status_code == 201, mine.text
    cat = requests.Session()
    cat.headers["Authorization"] = "Bearer " + h.token(c)
    assert_problem(cat.delete(f"{h.url}{API}/reactions/{mine.json()['id']}"), 403)
    assert_problem(cat.get(f"{h.url}{API}/users/{a}/feed", params={"reader": b}), 403)
    assert cat.get(f"{h.url}{API}/users/{a}/feed", params={"reader": c}).status_code == 200
    assert bob.delete(f"{h.url}{API}/reactions/{mine.json()['id']}").status_code == 200


def test_counts_exact_when_many_like_at_once_through_two_servers(backend, herald):
    """Two servers on one store; 8 threads like one activity as 40 users, each
    user twice (through either server): the count is the users."""
    first = herald.start(backend)
    # Redis Cluster: a second server on the same cluster; RocksDB is one process's.
    second = herald.start(backend) if backend == "redis" else first
    s = first.session()
    act = post(s, first, actor=uid("ann"), verb="post")
    users = [uid("u") for _ in range(40)]
    errors = []

    def worker(k):
        sess = requests.Session()
        for i, u in enumerate(users):
            h = first if (i + k) % 2 else second
            r = sess.post(f"{h.url}{API}/activities/{act['id']}/reactions", json={"user": u, "kind": "like"})
            if r.status_code not in (200, 201):
                errors.append(r.text)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert counts(s, first, act["id"]) == {"like": 40}
    body = page(s, f"{first.url}{API}/activities/{act['id']}/reactions", limit=100)
    assert sorted(r["user"] for r in body["reactions"]) == sorted(users)
