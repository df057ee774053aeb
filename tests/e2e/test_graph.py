"""The social graph (API.md "Social graph"): directed follows, friends (mutual follows),
group membership, and their lists paged by cursor. Every test runs on both backends;
names are unique per test (the Redis cluster is shared)."""

import time

import pytest

from conftest import assert_problem, uid

API = "/api/v1"


def follow(s, server, a, b):
    r = s.put(f"{server.url}{API}/users/{a}/follows/{b}")
    assert r.status_code == 200, r.text
    return r.json()


def unfollow(s, server, a, b):
    r = s.delete(f"{server.url}{API}/users/{a}/follows/{b}")
    assert r.status_code == 200, r.text
    return r.json()


def list_all(s, url, field="users", limit=2):
    """Every item of a list, page by page; checks that no page repeats an item."""
    items, cursor, pages = [], None, 0
    while True:
        params = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        r = s.get(url, params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body[field]) <= limit
        items += body[field]
        pages += 1
        cursor = body.get("next_cursor")
        if not cursor:
            break
        assert pages < 100
    assert len(items) == len(set(items)), f"a page repeated an item: {items}"
    return items


def test_follow_lists_both_ends_newest_first(server):
    s = server.session()
    a = uid("a")
    targets = [uid(f"t{i}") for i in range(5)]
    for t in targets:
        assert follow(s, server, a, t) == {"following": True, "new": True}
    time.sleep(0.01)  # relations are ordered by time in ms: make the re-follow strictly newer
    assert follow(s, server, a, targets[0]) == {"following": True, "new": False}
    got = list_all(s, f"{server.url}{API}/users/{a}/follows")
    assert set(got) == set(targets)
    # newest first: the re-follow of targets[0] made it the newest
    assert got[0] == targets[0]
    for t in targets:
        assert list_all(s, f"{server.url}{API}/users/{t}/followers") == [a]


def test_friends_are_mutual_follows_only(server):
    s = server.session()
    a, b, c = uid("a"), uid("b"), uid("c")
    follow(s, server, a, b)
    follow(s, server, a, c)
    assert list_all(s, f"{server.url}{API}/users/{a}/friends") == []
    follow(s, server, b, a)
    assert list_all(s, f"{server.url}{API}/users/{a}/friends") == [b]
    assert list_all(s, f"{server.url}{API}/users/{b}/friends") == [a]
    assert list_all(s, f"{server.url}{API}/users/{c}/friends") == []
    # one unfollow ends the friendship on both sides
    assert unfollow(s, server, b, a) == {"following": False, "was_following": True}
    assert list_all(s, f"{server.url}{API}/users/{a}/friends") == []
    assert list_all(s, f"{server.url}{API}/users/{b}/friends") == []
    assert list_all(s, f"{server.url}{API}/users/{a}/followers") == []
    assert unfollow(s, server, b, a) == {"following": False, "was_following": False}


def test_groups_join_leave_and_lists(server):
    s = server.session()
    g = uid("g")
    users = [uid(f"m{i}") for i in range(3)]
    for u in users:
        r = s.put(f"{server.url}{API}/groups/{g}/members/{u}")
        assert r.status_code == 200 and r.json() == {"member": True, "new": True}, r.text
    assert set(list_all(s, f"{server.url}{API}/groups/{g}/members")) == set(users)
    assert list_all(s, f"{server.url}{API}/users/{users[0]}/groups", field="groups") == [g]
    r = s.delete(f"{server.url}{API}/groups/{g}/members/{users[0]}")
    assert r.status_code == 200 and r.json() == {"member": False, "was_member": True}
    assert set(list_all(s, f"{server.url}{API}/groups/{g}/members")) == set(users[1:])
    assert list_all(s, f"{server.url}{API}/users/{users[0]}/groups", field="groups") == []


def test_graph_bad_input(server):
    s = server.session()
    a = uid("a")
    assert_problem(s.put(f"{server.url}{API}/users/{a}/follows/{a}"), 400)
    assert_problem(s.put(f"{server.url}{API}/users/{a}/follows/bad%20id"), 400, "target")
    assert_problem(s.get(f"{server.url}{API}/users/{a}/follows", params={"limit": 1001}), 400, "limit")
    assert_problem(s.get(f"{server.url}{API}/users/{a}/follows", params={"limit": 0}), 400, "limit")
    assert_problem(s.get(f"{server.url}{API}/users/{a}/follows", params={"cursor": "zz"}), 400, "cursor")
    # nothing was stored by the rejected calls
    assert list_all(s, f"{server.url}{API}/users/{a}/follows") == []


def test_graph_auth(secure_server):
    h = secure_server
    a, b = uid("a"), uid("b")
    sa = h.session(h.token(a))
    assert sa.put(f"{h.url}{API}/users/{a}/follows/{b}").status_code == 200
    # a user token acts only as its user
    assert_problem(sa.put(f"{h.url}{API}/users/{b}/follows/{a}"), 403)
    assert_problem(sa.put(f"{h.url}{API}/groups/g1/members/{b}"), 403)
    assert_problem(h.session().put(f"{h.url}{API}/users/{a}/follows/{b}"), 401)
    # the graph itself is public to any valid token
    assert sa.get(f"{h.url}{API}/users/{b}/followers").json()["users"] == [a]
    admin = h.session(h.admin_key)
    assert admin.put(f"{h.url}{API}/users/{b}/follows/{a}").status_code == 200
    assert sa.get(f"{h.url}{API}/users/{a}/friends").json()["users"] == [b]
