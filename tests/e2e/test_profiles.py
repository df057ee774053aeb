"""Profiles, objects and enrichment (API.md "Profiles, objects and
enrichment"): profiles and objects stored and read back, who may write them,
limits, and enrich=true on every feed read: the actors', groups' and objects'
JSON in "included", an update showing in the next page, ids with nothing
stored left out."""

import requests

from conftest import assert_problem, uid
from test_feeds import eventually, follow, page, post

API = "/api/v1"


def test_profiles_and_objects_round_trip(server):
    s = server.session()
    u, g, o = uid("u"), uid("g"), f"thread:{uid('t')}"
    assert_problem(s.get(f"{server.url}{API}/users/{u}/profile"), 404)
    r = s.put(f"{server.url}{API}/users/{u}/profile", json={"name": "Ann", "avatar": "https://x/a.png"})
    assert r.status_code == 200 and r.json() == {"name": "Ann", "avatar": "https://x/a.png"}
    assert s.get(f"{server.url}{API}/users/{u}/profile").json()["name"] == "Ann"
    assert s.put(f"{server.url}{API}/groups/{g}/profile", json={"title": "Hikers"}).status_code == 200
    assert s.get(f"{server.url}{API}/groups/{g}/profile").json() == {"title": "Hikers"}
    assert s.put(f"{server.url}{API}/objects/{o}", json={"subject": "Saturday"}).status_code == 200
    assert s.get(f"{server.url}{API}/objects/{o}").json() == {"subject": "Saturday"}
    r = s.delete(f"{server.url}{API}/objects/{o}")
    assert r.status_code == 200 and r.json() == {"deleted": True}
    assert_problem(s.get(f"{server.url}{API}/objects/{o}"), 404)
    assert_problem(s.delete(f"{server.url}{API}/objects/{o}"), 404)


def test_bad_profiles_are_refused_and_change_nothing(server):
    s = server.session()
    u = uid("u")
    url = f"{server.url}{API}/users/{u}/profile"
    assert_problem(s.put(url, json=[1, 2]), 400)
    assert_problem(s.put(url, data="{not json"), 400)
    assert_problem(s.put(url, json={"bio": "x" * 5000}), 413, "profile")
    assert_problem(s.put(f"{server.url}{API}/objects/o1", json={"x": "y" * 17000}), 413, "object")
    assert_problem(s.get(url), 404)
    assert s.put(url, json={"bio": "x" * 4000}).status_code == 200


def test_enriched_pages_include_what_they_name(server):
    s = server.session()
    a, b, reader, g = uid("ann"), uid("bob"), uid("r"), uid("g")
    obj = f"thread:{uid('t')}"
    s.put(f"{server.url}{API}/users/{a}/profile", json={"name": "Ann"}).raise_for_status()
    s.put(f"{server.url}{API}/groups/{g}/profile", json={"title": "G"}).raise_for_status()
    s.put(f"{server.url}{API}/objects/{obj}", json={"subject": "hi"}).raise_for_status()
    follow(s, server, reader, a)
    follow(s, server, reader, b)
    post(s, server, actor=a, verb="post", object=obj, target=f"group:{g}")
    post(s, server, actor=b, verb="post", object=obj)
    eventually(lambda: len(page(s, f"{server.url}{API}/users/{reader}/timeline")["activities"]) == 2)
    plain = page(s, f"{server.url}{API}/users/{reader}/timeline")
    assert "included" not in plain
    body = page(s, f"{server.url}{API}/users/{reader}/timeline", enrich="true")
    assert body["activities"] == plain["activities"]
    assert body["included"] == {"users": {a: {"name": "Ann"}}, "groups": {g: {"title": "G"}},
                                "objects": {obj: {"subject": "hi"}}}
    # an update shows in the next page read
    s.put(f"{server.url}{API}/users/{a}/profile", json={"name": "Annie"}).raise_for_status()
    body = page(s, f"{server.url}{API}/users/{reader}/timeline", enrich="true")
    assert body["included"]["users"][a] == {"name": "Annie"}
    for url in (f"{server.url}{API}/users/{a}/feed", f"{server.url}{API}/groups/{g}/feed"):
        assert page(s, url, enrich="true")["included"]["users"] == {a: {"name": "Annie"}}
    q = page(s, f"{server.url}{API}/activities", object=obj, enrich="true")
    assert q["included"]["objects"] == {obj: {"subject": "hi"}}
    assert_problem(s.get(f"{server.url}{API}/users/{a}/feed", params={"enrich": "yes"}), 400, "enrich")


def test_who_may_write(secure_server):
    h = secure_server
    a, b = uid("ann"), uid("bob")
    admin = requests.Session()
    admin.headers["Authorization"] = "Bearer " + h.admin_key
    ann = requests.Session()
    ann.headers["Authorization"] = "Bearer " + h.token(a)
    assert ann.put(f"{h.url}{API}/users/{a}/profile", json={"n": 1}).status_code == 200
    assert_problem(ann.put(f"{h.url}{API}/users/{b}/profile", json={"n": 1}), 403)
    assert admin.put(f"{h.url}{API}/users/{b}/profile", json={"n": 2}).status_code == 200
    assert_problem(ann.put(f"{h.url}{API}/groups/g1/profile", json={"n": 1}), 403)
    assert_problem(ann.put(f"{h.url}{API}/objects/o1", json={"n": 1}), 403)
    assert_problem(ann.delete(f"{h.url}{API}/objects/o1"), 403)
    assert admin.put(f"{h.url}{API}/objects/o1", json={"n": 1}).status_code == 200
    assert ann.get(f"{h.url}{API}/objects/o1").json() == {"n": 1}
    assert ann.get(f"{h.url}{API}/users/{b}/profile").json() == {"n": 2}
