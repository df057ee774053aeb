"""Stories (API.md "Stories and ratings"; seed: social reader data model).

A story has an id (16 lower-case hex digits derived from its first URL's canonical
form), a preferred URL, any number of other URLs, a time, a content (HTML) and a score
(the sum of its ratings). Variants of a known story's URL (http/https, www., default
port, index.html, trailing slash, fragment, utm_* parameters) find that story.

Every test runs on both backends through the session `server` fixture. The redis
backend is a shared cluster that outlives the run and story ids are derived from URLs,
so every URL carries a fresh uuid. `stories/recent` is global: the recent tests date
their stories after the newest story the server has (at least a year ahead, see
future_base) and filter the answers to their own ids.
"""

import json
import random
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import assert_problem, uid

KIB = 1024
CONTENT_MAX = 256 * KIB
YEAR_MS = 365 * 24 * 3600 * 1000
ID_RE = re.compile(r"[0-9a-f]{16}")
UNKNOWN_ID = "0123456789abcdef"  # 16 hex digits, never created (ids are hashes)
T = 30  # request timeout, seconds


def now_ms():
    return int(time.time() * 1000)


def fresh_path():
    return f"/{uuid.uuid4().hex}/story"


def fresh_url(host="news.example.com"):
    return f"https://{host}{fresh_path()}"


# -- helpers --------------------------------------------------------------------


def post_story(server, url, content=None, t=None, session=None, **kw):
    body = {"url": url}
    if content is not None:
        body["content"] = content
    if t is not None:
        body["time"] = t
    return (session or requests).post(f"{server.url}/api/v1/stories", json=body, timeout=T, **kw)


def create_story(server, url, content="<p>hello</p>", t=None, session=None):
    """POST a new story, assert 201; returns the answer."""
    r = post_story(server, url, content, t, session)
    assert r.status_code == 201, f"POST /api/v1/stories {url!r}: expected 201, got {r.status_code} {r.text[:300]}"
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    s = r.json()
    assert ID_RE.fullmatch(s.get("id", "")), f"story id is not 16 lower-case hex digits: {s}"
    assert isinstance(s.get("url"), str), s
    assert "duplicate" not in s or s["duplicate"] is False, f"a new story answered as a duplicate: {s}"
    return s


def get_story(server, sid, session=None):
    r = (session or requests).get(f"{server.url}/api/v1/stories/{sid}", timeout=T)
    assert r.status_code == 200, f"GET /api/v1/stories/{sid}: {r.status_code} {r.text[:300]}"
    s = r.json()
    check_full_story(s)
    return s


def find_story(server, url, session=None):
    """GET /api/v1/stories?url=...; returns the response."""
    return (session or requests).get(f"{server.url}/api/v1/stories", params={"url": url}, timeout=T)


def check_full_story(s):
    for k in ("id", "url", "urls", "time", "score", "content"):
        assert k in s, f"a single-story read lacks {k!r}: {sorted(s)}"
    assert ID_RE.fullmatch(s["id"]), s["id"]
    assert isinstance(s["urls"], list) and all(isinstance(u, str) for u in s["urls"]), s["urls"]
    assert s["url"] in s["urls"], f"the preferred url {s['url']!r} is not among the urls {s['urls']}"
    assert isinstance(s["time"], int) and isinstance(s["score"], int), s
    assert isinstance(s["content"], str), type(s["content"])


def check_list_item(s):
    for k in ("id", "url", "time", "score"):
        assert k in s, f"a story list item lacks {k!r}: {s}"
    assert "content" not in s, f"a story list item carries the content (only single reads do): {sorted(s)}"
    assert ID_RE.fullmatch(s["id"]), s


def rate(server, subject, obj, score, t=None, session=None):
    body = {"score": score}
    if t is not None:
        body["time"] = t
    r = (session or requests).put(f"{server.url}/api/v1/ratings/{subject}/{obj}", json=body, timeout=T)
    assert r.status_code == 200, f"PUT /api/v1/ratings/{subject}/{obj} {body}: {r.status_code} {r.text[:300]}"
    return r.json()


def recent(server, session=None, **params):
    r = (session or requests).get(f"{server.url}/api/v1/stories/recent", params=params, timeout=T)
    assert r.status_code == 200, f"GET /api/v1/stories/recent {params}: {r.status_code} {r.text[:300]}"
    body = r.json()
    assert isinstance(body.get("stories"), list), body
    for s in body["stories"]:
        check_list_item(s)
    return body


def recent_all(server, since, limit=1000, session=None, max_pages=200):
    """Every story newer than since, following next_cursor."""
    out, cursor = [], None
    for _ in range(max_pages):
        params = {"since": since, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        body = recent(server, session, **params)
        out += body["stories"]
        cursor = body.get("next_cursor")
        if not cursor or not body["stories"]:
            return out
    pytest.fail(f"stories/recent since={since} did not end within {max_pages} pages")


# -- creation and de-duplication ----------------------------------------------------


def test_create_and_get(server):
    url = fresh_url()
    t = now_ms() - 5000
    s = create_story(server, url, "<h1>Title</h1><p>Body</p>", t)
    assert s["url"] == url
    got = get_story(server, s["id"])
    assert got["id"] == s["id"]
    assert got["url"] == url
    assert got["urls"] == [url]
    assert got["time"] == t
    assert got["score"] == 0
    assert got["content"] == "<h1>Title</h1><p>Body</p>"


def test_missing_time_means_now(server):
    before = now_ms()
    s = create_story(server, fresh_url(), "<p>x</p>")
    after = now_ms()
    got = get_story(server, s["id"])
    assert before - 2000 <= got["time"] <= after + 2000, (before, got["time"], after)


def test_unknown_story_404(server):
    assert_problem(requests.get(f"{server.url}/api/v1/stories/{UNKNOWN_ID}", timeout=T), 404)
    assert_problem(find_story(server, fresh_url()), 404)


def test_first_url_is_stored_canonical(server):
    """The story's url is the canonical form of the URL it was created with."""
    p = fresh_path()
    s = create_story(server, f"HTTP://WWW.News.Example.COM:80{p}/index.html?utm_source=x&utm_medium=y#top")
    assert s["url"] == f"https://news.example.com{p}"
    got = get_story(server, s["id"])
    assert got["url"] == f"https://news.example.com{p}"
    assert got["urls"] == [f"https://news.example.com{p}"]


def variants(host, path):
    return [
        f"https://{host}{path}",
        f"http://{host}{path}",
        f"https://www.{host}{path}",
        f"http://www.{host}{path}",
        f"HTTPS://{host.upper()}{path}",
        f"https://{host}:443{path}",
        f"http://{host}:80{path}",
        f"https://{host}.{path}",
        f"https://{host}{path}/",
        f"https://{host}{path}/index.html",
        f"https://{host}{path}/index.htm",
        f"https://{host}{path}/index.php",
        f"https://{host}{path}#comments",
        f"https://{host}{path}?utm_source=newsletter",
        f"https://{host}{path}?utm_source=a&utm_medium=email&utm_campaign=c&utm_term=t&utm_content=x",
        f"https://{host}{path}?fbclid=abc123",
        f"https://user:pw@{host}{path}",
        f"http://www.{host}:80{path}/index.html?utm_campaign=z#top",
    ]


def test_variants_are_duplicates(server):
    host, path = "news.example.com", fresh_path()
    canonical = f"https://{host}{path}"
    t = now_ms() - 60000
    s = create_story(server, f"http://www.{host}{path}/", "<p>original</p>", t)
    assert s["url"] == canonical
    sess = requests.Session()
    for v in variants(host, path):
        r = post_story(server, v, "<p>a different body</p>", now_ms(), session=sess)
        assert r.status_code == 200, f"POST variant {v!r}: expected 200 (duplicate), got {r.status_code} {r.text[:300]}"
        d = r.json()
        assert d.get("duplicate") is True, f"variant {v!r}: no \"duplicate\": true in {d}"
        assert d.get("id") == s["id"], f"variant {v!r} answered another story: {d}"
        assert d.get("url") == canonical, f"variant {v!r}: url {d.get('url')!r}, expected {canonical!r}"
    got = get_story(server, s["id"], session=sess)
    assert got["urls"] == [canonical], f"variants of the one canonical URL were added as urls: {got['urls']}"
    assert got["content"] == "<p>original</p>", "a duplicate POST replaced the story's content"
    assert got["time"] == t, "a duplicate POST replaced the story's time"


def test_lookup_by_any_variant(server):
    host, path = "blog.example.org", fresh_path()
    s = create_story(server, f"https://{host}{path}", "<p>lookup</p>")
    sess = requests.Session()
    for v in variants(host, path):
        r = find_story(server, v, session=sess)
        assert r.status_code == 200, f"GET /api/v1/stories?url={v!r}: {r.status_code} {r.text[:300]}"
        got = r.json()
        check_full_story(got)
        assert got["id"] == s["id"], f"lookup by {v!r} found another story: {got['id']}"
        assert got["url"] == f"https://{host}{path}"
        assert got["content"] == "<p>lookup</p>"


def test_encoding_and_dot_segment_variants(server):
    """Percent-encoding and dot segments fold as a browser resolves them."""
    u = uuid.uuid4().hex
    s = create_story(server, f"https://news.example.com/{u}/caf\u00e9/~x/story")
    assert s["url"] == f"https://news.example.com/{u}/caf%C3%A9/~x/story"
    for v in (f"https://news.example.com/{u}/caf%C3%A9/~x/story",
              f"https://news.example.com/{u}/caf%c3%a9/%7Ex/story",
              f"https://news.example.com/{u}/./caf%C3%A9/~x/other/../story",
              f"http://WWW.NEWS.EXAMPLE.COM/{u}/caf%C3%A9/%7ex/story/index.html"):
        r = post_story(server, v)
        assert r.status_code == 200 and r.json().get("duplicate") is True and r.json()["id"] == s["id"], \
            f"POST {v!r}: {r.status_code} {r.text[:200]}"
        r = find_story(server, v)
        assert r.status_code == 200 and r.json()["id"] == s["id"], f"GET ?url={v!r}: {r.status_code} {r.text[:200]}"


def test_non_variants_are_different_stories(server):
    """What the canonicaliser keeps apart must not be merged: path case, real query
    parameters, other subdomains, other ports, other paths."""
    host, path = "news.example.com", fresh_path()
    base = create_story(server, f"https://{host}{path}")
    others = [
        f"https://{host}{path.upper()}",
        f"https://{host}{path}?id=2",
        f"https://{host}{path}?ref=main",
        f"https://m.{host}{path}",
        f"https://www2.{host}{path}",
        f"https://{host}:8080{path}",
        f"https://{host}{path}/more",
        f"https://{host}{path}/index.jsp",
    ]
    ids = {base["id"]}
    for o in others:
        s = create_story(server, o)
        assert s["id"] not in ids, f"{o!r} was merged with another story"
        ids.add(s["id"])
    r = find_story(server, f"https://{host}{path}")
    assert r.status_code == 200 and r.json()["id"] == base["id"]


def test_concurrent_creates_of_variants_make_one_story(server):
    host, path = "race.example.com", fresh_path()
    vs = variants(host, path)[:12]
    barrier = threading.Barrier(len(vs))

    def go(v):
        barrier.wait(timeout=20)
        return post_story(server, v, "<p>race</p>")

    with ThreadPoolExecutor(len(vs)) as ex:
        rs = list(ex.map(go, vs))
    codes = [r.status_code for r in rs]
    assert codes.count(201) == 1 and codes.count(200) == len(vs) - 1, \
        f"concurrent POSTs of variants of one URL: statuses {codes} (expected one 201, the rest 200)"
    ids = {r.json()["id"] for r in rs}
    assert len(ids) == 1, f"concurrent variants made several stories: {ids}"
    for r in rs:
        if r.status_code == 200:
            assert r.json().get("duplicate") is True, r.text
    got = find_story(server, f"https://{host}{path}").json()
    assert got["id"] == ids.pop() and got["urls"] == [f"https://{host}{path}"]


# -- aliases ---------------------------------------------------------------------------


def add_url(server, sid, url, preferred=None, session=None):
    body = {"url": url}
    if preferred is not None:
        body["preferred"] = preferred
    return (session or requests).post(f"{server.url}/api/v1/stories/{sid}/urls", json=body, timeout=T)


def test_alias_urls(server):
    p1, p2 = fresh_path(), fresh_path()
    first = f"https://news.example.com{p1}"
    s = create_story(server, first, "<p>aliased</p>")
    r = add_url(server, s["id"], f"http://www.mirror.example.net{p2}/?utm_source=rss#x", preferred=False)
    assert r.status_code == 200, f"POST /stories/{{id}}/urls: {r.status_code} {r.text[:300]}"
    alias = f"https://mirror.example.net{p2}"
    body = r.json()
    assert body["id"] == s["id"], body
    assert body["url"] == first, "a non-preferred alias became the preferred url"
    assert set(body["urls"]) == {first, alias}, body["urls"]

    got = get_story(server, s["id"])
    assert got["url"] == first
    assert set(got["urls"]) == {first, alias}
    assert got["content"] == "<p>aliased</p>"
    # Found by any variant of the alias; a POST of an alias variant is a duplicate.
    for v in (alias, f"http://mirror.example.net{p2}/index.html", f"https://www.mirror.example.net{p2}#c"):
        r = find_story(server, v)
        assert r.status_code == 200 and r.json()["id"] == s["id"], f"lookup by alias variant {v!r}: {r.status_code} {r.text[:200]}"
        r = post_story(server, v, "<p>other</p>")
        assert r.status_code == 200, f"POST of alias variant {v!r}: {r.status_code} {r.text[:200]}"
        assert r.json().get("duplicate") is True and r.json()["id"] == s["id"], r.text
        assert r.json()["url"] == first, r.text


def test_alias_default_not_preferred(server):
    first, alias = fresh_url(), fresh_url("other.example.com")
    s = create_story(server, first)
    r = add_url(server, s["id"], alias)  # no "preferred": false by default
    assert r.status_code == 200, r.text
    got = get_story(server, s["id"])
    assert got["url"] == first
    assert set(got["urls"]) == {first, alias}


def test_alias_preferred_switch(server):
    first, second, third = fresh_url(), fresh_url("canonical.example.com"), fresh_url("third.example.com")
    t = future_base(server)
    s = create_story(server, first, "<p>pref</p>", t)
    r = add_url(server, s["id"], second.replace("https://", "http://www."), preferred=True)
    assert r.status_code == 200, r.text
    assert r.json()["url"] == second, f"preferred:true did not make the alias the story's url: {r.json()}"
    got = get_story(server, s["id"])
    assert got["id"] == s["id"], "the id changed with the preferred url (it is derived from the first url)"
    assert got["url"] == second
    assert set(got["urls"]) == {first, second}
    # Any URL of the story now answers with the new preferred url.
    for u in (first, second):
        r = post_story(server, u)
        assert r.status_code == 200, f"POST {u!r} after the preferred switch: {r.status_code} {r.text[:200]}"
        d = r.json()
        assert (d.get("id"), d.get("url"), d.get("duplicate")) == (s["id"], second, True), \
            f"POST {u!r} after the preferred switch: {d}"
        r = find_story(server, u)
        assert r.status_code == 200 and r.json()["url"] == second, r.text[:200]
    # And back to the first.
    r = add_url(server, s["id"], first, preferred=True)
    assert r.status_code == 200, f"preferred:true for a url the story already has: {r.status_code} {r.text[:200]}"
    assert get_story(server, s["id"])["url"] == first
    # A third, non-preferred: the preferred stays.
    assert add_url(server, s["id"], third, preferred=False).status_code == 200
    got = get_story(server, s["id"])
    assert got["url"] == first and set(got["urls"]) == {first, second, third}
    # Recent lists show the preferred url.
    items = [i for i in recent_all(server, t - 1) if i["id"] == s["id"]]
    assert [i["url"] for i in items] == [first], items


def test_alias_of_another_story_409(server):
    a_url, b_url = fresh_url(), fresh_url("b.example.com")
    a = create_story(server, a_url, "<p>a</p>")
    b = create_story(server, b_url, "<p>b</p>")
    before_a, before_b = get_story(server, a["id"]), get_story(server, b["id"])
    for v in (b_url, b_url.replace("https://", "http://www."), b_url + "/index.html?utm_source=x"):
        for pref in (False, True):
            r = add_url(server, a["id"], v, preferred=pref)
            assert_problem(r, 409)
    assert get_story(server, a["id"]) == before_a, "a 409 alias request changed the story"
    assert get_story(server, b["id"]) == before_b, "a 409 alias request changed the other story"
    assert find_story(server, b_url).json()["id"] == b["id"]


def test_alias_bad_input(server):
    url = fresh_url()
    s = create_story(server, url)
    before = get_story(server, s["id"])
    sess = requests.Session()
    for body in ({"url": "ftp://x"}, {"url": "not a url"}, {"url": ""}, {"url": 42}, {},
                 {"url": "https://"}, {"url": "https://exa mple.com/x"}):
        r = sess.post(f"{server.url}/api/v1/stories/{s['id']}/urls", json=body, timeout=T)
        assert_problem(r, 400, "url")
    r = sess.post(f"{server.url}/api/v1/stories/{s['id']}/urls", json={"url": fresh_url(), "preferred": "yes"}, timeout=T)
    assert_problem(r, 400, "preferred")
    r = sess.post(f"{server.url}/api/v1/stories/{s['id']}/urls", data=b"{not json", timeout=T,
                  headers={"Content-Type": "application/json"})
    assert_problem(r, 400)
    assert get_story(server, s["id"], sess) == before
    # An unknown story: 404, and the URL is not taken by anything.
    orphan = fresh_url()
    assert_problem(add_url(server, UNKNOWN_ID, orphan), 404)
    assert_problem(find_story(server, orphan), 404)


# -- content ------------------------------------------------------------------------------


def big_html(size):
    para = ("<p class=\"x\">Ünïcödé — 日本語のテキスト, Ελληνικά, עברית \u202e RTL \u202c, "
            "emoji 🎉👩‍👩‍👧‍👦, combining e\u0301, \"quotes\", back\\slash, tab\t, "
            "line\u2028sep, <script>alert('x')</script> &amp; ]]> %s %%00 {json: [1]}</p>\n")
    parts, n, i = [], 0, 0
    while n < size:
        p = para.replace("%s", str(i))
        parts.append(p)
        n += len(p.encode())
        i += 1
    return "<!doctype html><html><head><meta charset=utf-8><title>Büch</title></head><body>\n" \
        + "".join(parts) + "</body></html>\n"


def test_content_roundtrip_100kib_unicode(server):
    content = big_html(100 * KIB)
    assert 100 * KIB <= len(content.encode()) <= 200 * KIB
    s = create_story(server, fresh_url(), content)
    got = get_story(server, s["id"])
    assert got["content"] == content, "the content came back changed"
    r = find_story(server, s["url"])
    assert r.json()["content"] == content
    # Sent as raw UTF-8 (not \\u escapes), too.
    raw = json.dumps({"url": fresh_url(), "content": content}, ensure_ascii=False).encode()
    r = requests.post(f"{server.url}/api/v1/stories", data=raw, timeout=T,
                      headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201, r.text[:300]
    assert get_story(server, r.json()["id"])["content"] == content


def test_content_limit(server):
    """Content up to 256 KiB is kept; over it is 413 and nothing is stored."""
    at_limit = "a" * CONTENT_MAX
    s = create_story(server, fresh_url(), at_limit)
    assert get_story(server, s["id"])["content"] == at_limit

    url = fresh_url()
    r = post_story(server, url, "a" * (CONTENT_MAX + 1))
    assert_problem(r, 413, "content")
    assert_problem(find_story(server, url), 404)
    # The limit is in bytes of UTF-8: 131,079 characters, 262,151 bytes (sent raw).
    raw = json.dumps({"url": url, "content": "<p>" + "é" * (CONTENT_MAX // 2) + "</p>"}, ensure_ascii=False)
    r = requests.post(f"{server.url}/api/v1/stories", data=raw.encode(), timeout=T,
                      headers={"Content-Type": "application/json"})
    assert_problem(r, 413, "content")
    assert_problem(find_story(server, url), 404)


def test_empty_content(server):
    s = create_story(server, fresh_url(), "")
    assert get_story(server, s["id"])["content"] == ""


# -- bad input ---------------------------------------------------------------------------------


BAD_URLS = ["ftp://x", "not a url", "", "https://", "javascript:alert(1)", "mailto:a@b.c",
            "//example.com/x", "/relative/path", "https://exa mple.com/", "https://example.com:99999/",
            "https://bad_host!.com/", "http://caf\u00e9.example.com/", "https://a.com/\\x",
            "https://example.com/" + "a" * 3000]


def test_bad_story_input_changes_nothing(server):
    sess = requests.Session()
    api = f"{server.url}/api/v1/stories"
    for u in BAD_URLS:
        r = sess.post(api, json={"url": u, "content": "<p>x</p>"}, timeout=T)
        assert_problem(r, 400, "url")
    for body in ({"content": "<p>no url</p>"}, {"url": None}, {"url": 42}, {"url": ["https://a.com/"]}):
        assert_problem(sess.post(api, json=body, timeout=T), 400, "url")
    # Valid url, another field bad: 400 naming it, and the url is not taken.
    for body, field in (({"content": 5}, "content"), ({"content": ["x"]}, "content"),
                        ({"time": "yesterday"}, "time"), ({"time": 1.5}, "time"), ({"time": [1]}, "time")):
        url = fresh_url()
        r = sess.post(api, json={"url": url, **body}, timeout=T)
        assert_problem(r, 400, field)
        assert_problem(find_story(server, url, sess), 404)
    for raw in (b"", b"{", b"[]", b"\"https://a.com/\"", b"null", b"{\"url\": \"https://a.com/\"", b"\xff\xfe"):
        r = sess.post(api, data=raw, timeout=T, headers={"Content-Type": "application/json"})
        assert_problem(r, 400)
    # A known story is untouched by a rejected duplicate (bad time, oversized content).
    url = fresh_url()
    s = create_story(server, url, "<p>keep</p>", now_ms() - 1000)
    before = get_story(server, s["id"], sess)
    assert_problem(sess.post(api, json={"url": url, "content": "a" * (CONTENT_MAX + 1)}, timeout=T), 413, "content")
    assert_problem(sess.post(api, json={"url": url, "time": "x"}, timeout=T), 400, "time")
    assert get_story(server, s["id"], sess) == before


def test_bad_lookups(server):
    sess = requests.Session()
    for u in ("ftp://x", "not a url", ""):
        r = sess.get(f"{server.url}/api/v1/stories", params={"url": u}, timeout=T)
        assert_problem(r, 400, "url")
    for bad_id in ("0123456789ABCDEF", "0123", "zzzzzzzzzzzzzzzz", "0123456789abcdef0"):
        r = sess.get(f"{server.url}/api/v1/stories/{bad_id}", timeout=T)
        assert r.status_code in (400, 404), f"GET /api/v1/stories/{bad_id}: {r.status_code} {r.text[:200]}"
        assert_problem(r, r.status_code)


# -- recent ------------------------------------------------------------------------------------


def future_base(server, ahead=YEAR_MS, margin=1000):
    """A base time for stories that must be the newest in the world: a year ahead, and
    after the newest story the server already has (the redis cluster is shared with
    earlier runs and other tests, some of which date their stories in the future). Then
    `since=base - 1` lists only this test's stories and any created concurrently."""
    body = recent(server, limit=1)
    newest = max([s["time"] for s in body["stories"]] + [0])
    return max(now_ms() + ahead, newest + margin)


def test_recent_newest_first_and_since_exclusive(server):
    base = future_base(server)
    times = [base, base + 10, base + 20, base + 30, base + 40, base + 50]
    order = list(range(len(times)))
    random.shuffle(order)  # created out of time order
    ids = {}
    for i in order:
        ids[i] = create_story(server, fresh_url(), f"<p>{i}</p>", times[i])["id"]
    mine = set(ids.values())

    def own(items):
        return [(s["id"], s["time"]) for s in items if s["id"] in mine]

    want = [(ids[i], times[i]) for i in reversed(range(len(times)))]
    got = own(recent_all(server, base - 1))
    assert got == want, f"stories/recent since={base - 1}: got {got}, expected newest first {want}"
    # since is exclusive.
    assert own(recent_all(server, base)) == want[:-1]
    assert own(recent_all(server, base + 25)) == want[:3]
    assert own(recent_all(server, base + 50)) == []
    assert own(recent_all(server, base + 49)) == want[:1]
    # Items carry the url, time and score; no content.
    items = [s for s in recent_all(server, base - 1) if s["id"] in mine]
    for s in items:
        assert s["score"] == 0 and s["url"].startswith("https://news.example.com/"), s


def test_recent_limit_and_cursor(server):
    base = future_base(server)
    ids = [create_story(server, fresh_url(), "<p>c</p>", base + i)["id"] for i in range(7)]
    body = recent(server, since=base - 1, limit=3)
    assert len(body["stories"]) == 3, body
    assert body.get("next_cursor"), f"a full page with more behind it has no next_cursor: {body}"
    seen = recent_all(server, base - 1, limit=2)
    got = [s["id"] for s in seen if s["id"] in ids]
    assert got == ids[::-1]
    all_ids = [s["id"] for s in seen]
    assert len(all_ids) == len(set(all_ids)), "paging repeated a story"
    # Far in the future: nothing, and no cursor.
    body = recent(server, since=base + 100 * YEAR_MS, limit=5)
    assert body["stories"] == [] and not body.get("next_cursor"), body


def test_recent_default_limit(server):
    for _ in range(21):
        create_story(server, fresh_url())
    body = recent(server)
    assert len(body["stories"]) == 20, f"the default limit is 20: got {len(body['stories'])}"
    assert body.get("next_cursor"), "a default page with more behind it has no next_cursor"
    times = [s["time"] for s in body["stories"]]
    assert times == sorted(times, reverse=True), f"stories/recent is not newest first: {times}"


def test_recent_cursor_stable_under_inserts(server):
    """Paging by cursor never repeats or skips a story, even with newer stories (and
    stories with equal times) created between pages."""
    base = future_base(server)
    initial = {}
    for i in range(16):
        t = base + (i // 3) * 100  # groups of three share a time
        initial[create_story(server, fresh_url(), "<p>p</p>", t)["id"]] = t
    inserted = set()
    pages, cursor, collected = 0, None, []
    first_page = 0
    while True:
        params = {"since": base - 1, "limit": 3}
        if cursor:
            params["cursor"] = cursor
        body = recent(server, **params)
        collected += body["stories"]
        pages += 1
        if pages == 1:
            first_page = len(collected)
        # Stories newer than any listed so far arrive between pages (two sharing a time).
        t_new = max([s["time"] for s in collected] + [base + 1000]) + 1000
        for k in range(2):
            inserted.add(create_story(server, fresh_url(), "<p>new</p>", t_new)["id"])
        cursor = body.get("next_cursor")
        if not cursor or not body["stories"]:
            break
        assert pages < 200, "paging did not end"
    ids = [s["id"] for s in collected]
    dups = {i for i in ids if ids.count(i) > 1}
    assert not dups, f"paging repeated stories: {dups}"
    missing = set(initial) - set(ids)
    assert not missing, f"paging skipped stories that existed before it began: {missing}"
    times = [s["time"] for s in collected]
    assert times == sorted(times, reverse=True), "pages are not newest first across the cursor"
    assert not (set(ids[first_page:]) & inserted), "a story newer than the first page showed up on a later page"
    for s in collected:
        if s["id"] in initial:
            assert s["time"] == initial[s["id"]]
    # A fresh listing shows the inserted ones first.
    fresh = [s["id"] for s in recent_all(server, base - 1) if s["id"] in inserted or s["id"] in initial]
    assert set(fresh[:len(inserted)]) == inserted and set(fresh[len(inserted):]) == set(initial)


def test_recent_cursor_with_concurrent_writer(server):
    """A writer thread keeps creating newer stories while a reader pages with limit 2."""
    base = future_base(server)
    initial = {create_story(server, fresh_url(), "<p>p</p>", base + i * 7)["id"] for i in range(12)}
    stop = threading.Event()
    made = []

    def writer():
        s = requests.Session()
        k = 0
        while not stop.is_set() and k < 30:
            r = post_story(server, fresh_url(), "<p>w</p>", base + 5_000 + k, session=s)
            if r.status_code == 201:
                made.append(r.json()["id"])
            k += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        got = recent_all(server, base - 1, limit=2)
    finally:
        stop.set()
        th.join(30)
    assert made, "the writer created nothing"
    ids = [s["id"] for s in got]
    assert len(ids) == len(set(ids)), "paging under a concurrent writer repeated a story"
    assert initial <= set(ids), f"paging under a concurrent writer skipped {initial - set(ids)}"
    times = [s["time"] for s in got]
    assert times == sorted(times, reverse=True)


def test_recent_bad_params(server):
    sess = requests.Session()
    api = f"{server.url}/api/v1/stories/recent"
    for params, field in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"limit": -1}, "limit"),
                          ({"limit": "ten"}, "limit"), ({"limit": ""}, "limit"),
                          ({"since": "yesterday"}, "since"), ({"since": "1.5"}, "since"),
                          ({"cursor": "garbage"}, "cursor"), ({"cursor": "!!!"}, "cursor")):
        r = sess.get(api, params=params, timeout=T)
        assert_problem(r, 400, field)
    assert sess.get(api, params={"limit": 1000}, timeout=T).status_code == 200
    assert sess.get(api, params={"limit": 1}, timeout=T).status_code == 200


# -- score in story reads --------------------------------------------------------------------------


def test_score_is_sum_of_ratings(server):
    t = future_base(server)
    s = create_story(server, fresh_url(), "<p>score</p>", t)
    sid = s["id"]
    sess = requests.Session()
    subjects = [uid("voter") for _ in range(5)]
    for subj in subjects[:4]:
        rate(server, subj, sid, 1, session=sess)
    rate(server, subjects[4], sid, -1, session=sess)
    assert get_story(server, sid)["score"] == 3
    rate(server, subjects[0], sid, -1, session=sess)  # +1 -> -1: -2
    assert get_story(server, sid)["score"] == 1
    rate(server, subjects[1], sid, 0, session=sess)  # +1 -> 0 (seen): -1
    assert get_story(server, sid)["score"] == 0
    r = find_story(server, s["url"])
    assert r.json()["score"] == 0
    rate(server, subjects[4], sid, 1, session=sess)  # -1 -> +1: +2
    got = get_story(server, sid)
    assert got["score"] == 2
    items = [i for i in recent_all(server, t - 1) if i["id"] == sid]
    assert items and items[0]["score"] == 2, items


# -- auth -------------------------------------------------------------------------------------------


def test_auth_story_create_needs_a_token(secure_server):
    srv = secure_server
    url = fresh_url()
    r = post_story(srv, url, "<p>x</p>")
    assert_problem(r, 401)
    r = post_story(srv, url, "<p>x</p>", headers={"Authorization": "Bearer garbage"})
    assert_problem(r, 401)
    admin = srv.session(srv.admin_key)
    assert_problem(find_story(srv, url, admin), 404)  # the 401s stored nothing

    alice = srv.session(srv.token("alice"))
    r = post_story(srv, url, "<p>x</p>", session=alice)
    assert r.status_code == 201, f"a user token could not create a story: {r.status_code} {r.text[:200]}"
    sid = r.json()["id"]
    r = post_story(srv, url.replace("https://", "http://www."), session=admin)
    assert r.status_code == 200 and r.json()["id"] == sid
    r = post_story(srv, fresh_url(), session=admin)
    assert r.status_code == 201, r.text

    # Reads of stories need any valid token.
    for path, params in ((f"/api/v1/stories/{sid}", None), ("/api/v1/stories", {"url": url}),
                         ("/api/v1/stories/recent", {"limit": 1})):
        assert_problem(requests.get(srv.url + path, params=params, timeout=T), 401)
        r = alice.get(srv.url + path, params=params, timeout=T)
        assert r.status_code == 200, f"GET {path} with a user token: {r.status_code} {r.text[:200]}"
    # Aliases need a token too.
    alias = fresh_url("alias.example.com")
    r = requests.post(f"{srv.url}/api/v1/stories/{sid}/urls", json={"url": alias}, timeout=T)
    assert_problem(r, 401)
    assert_problem(find_story(srv, alias, admin), 404)
    r = admin.post(f"{srv.url}/api/v1/stories/{sid}/urls", json={"url": alias}, timeout=T)
    assert r.status_code == 200, r.text
