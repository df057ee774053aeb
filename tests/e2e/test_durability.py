"""Durability (DESIGN.md "Durability and concurrency"): an acknowledged PUT survives
`kill -9` of the server; counts and settings survive restarts."""

import subprocess
import threading
import time

import requests

from conftest import free_port, uid

WRITERS = 8


def restart_on_new_port(h):
    """Restart a stopped/killed server on the same store (a fresh port: no TIME_WAIT games)."""
    h.port = free_port()
    h.listen = f"127.0.0.1:{h.port}"
    h.url = f"http://127.0.0.1:{h.port}"
    return h.start()


def kill9_while_writing(h, writer, n_threads, stop, seconds):
    """Run writer(k) on n_threads threads, kill -9 the server after `seconds`, then tell
    the writers to stop (they also stop on their first failed request) and wait for them."""
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    h.kill()
    stop.set()
    for t in threads:
        t.join(timeout=30)


def test_kill9_under_concurrent_writers_loses_no_acknowledged_put(herald, backend):
    h = herald.start(backend)
    prefix = uid("dur")
    objs = [f"{prefix}-{i}" for i in range(4)]
    sent = {o: set() for o in objs}
    acked = {o: set() for o in objs}
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def writer(k):
        s = requests.Session()
        i = 0
        while not stop.is_set():
            o = objs[i % len(objs)]
            tok = f"w{k}-{i}"
            with lock:
                sent[o].add(tok)
            try:
                r = s.put(f"{h.url}/api/v1/counter/{o}", data=tok, timeout=10)
            except requests.exceptions.RequestException:
                break  # the server is gone
            if r.status_code == 200:
                with lock:
                    acked[o].add(tok)
            else:
                errors.append(f"{r.status_code} {r.text[:200]}")
                break
            i += 1

    kill9_while_writing(h, writer, WRITERS, stop, 2.0)
    assert not errors, f"PUTs failed before the kill: {errors[:5]}"
    n_acked = sum(len(v) for v in acked.values())
    assert n_acked >= 50, f"only {n_acked} PUTs were acknowledged in 2 s"

    restart_on_new_port(h)
    got = h.counts("default", objs)
    for o in objs:
        assert len(acked[o]) <= got[o] <= len(sent[o]), \
            (f"{o}: count {got[o]} after kill -9, but {len(acked[o])} distinct tokens were acknowledged "
             f"and {len(sent[o])} sent")
    # And the restarted server keeps counting from there.
    o = objs[0]
    assert h.add(o, uid("after")) == got[o] + 1


def test_sigterm_under_load_finishes_cleanly(herald, backend):
    """SIGTERM with 8 busy writers: exit 0, no sanitizer report, no 5xx answered,
    and every acknowledged PUT is there after the restart."""
    h = herald.start(backend)
    obj = uid("term")
    acked, sent = set(), set()
    lock = threading.Lock()
    bad = []
    stop = threading.Event()

    def writer(k):
        s = requests.Session()
        i = 0
        while not stop.is_set():
            tok = f"w{k}-{i}"
            with lock:
                sent.add(tok)
            try:
                r = s.put(f"{h.url}/api/v1/counter/{obj}", data=tok, timeout=10)
            except requests.exceptions.RequestException:
                break
            if r.status_code == 200:
                with lock:
                    acked.add(tok)
            elif r.status_code >= 500:
                bad.append(f"{r.status_code} {r.text[:200]}")
                break
            i += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(WRITERS)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    rc = h.stop(check=False)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    h.check_clean(rc)
    assert not bad, f"5xx answered during shutdown: {bad[:3]}"
    restart_on_new_port(h)
    n = h.count(obj)
    assert len(acked) <= n <= len(sent), f"count {n}, acknowledged {len(acked)}, sent {len(sent)}"


def test_counts_and_settings_survive_clean_restart(herald, backend):
    h = herald.start(backend)
    c = uid("cnt")
    h.set_counter(c, ttl_ms=3600000, exact_limit=20)
    exact, hot = uid("exact"), uid("hot")
    s = requests.Session()
    for i in range(15):
        h.add(exact, f"t{i}", counter=c, session=s)
    for i in range(400):
        h.add(hot, f"t{i}", counter=c, session=s)
    before = h.counts(c, [exact, hot])
    assert before[exact] == 15
    h.stop(check=True)
    restart_on_new_port(h)
    got = h.get_counter(c)
    assert (got["ttl_ms"], got["exact_limit"]) == (3600000, 20), f"settings after restart: {got}"
    after = h.counts(c, [exact, hot])
    assert after == before, f"counts changed across a clean restart: {before} -> {after}"
    # Known tokens are still known (the exact set and the sketch were persisted).
    assert h.add(exact, "t3", counter=c) == 15
    assert h.add(exact, "new", counter=c) == 16


def test_kill9_keeps_estimates_and_settings(herald, backend):
    h = herald.start(backend)
    c = uid("cnt")
    h.set_counter(c, exact_limit=30)
    hot = uid("hot")
    s = requests.Session()
    for i in range(500):
        h.add(hot, f"t{i}", counter=c, session=s)
    before = h.count(hot, counter=c)
    assert 475 <= before <= 525, before
    h.kill()
    restart_on_new_port(h)
    assert h.get_counter(c)["exact_limit"] == 30, "settings lost on kill -9"
    assert h.count(hot, counter=c) == before, "the estimate changed across kill -9"


def test_kill9_under_concurrent_upserts_keeps_every_acknowledged_rating(herald, backend):
    """Ratings upserted by 6 threads over 3 stories until kill -9: after a restart every
    acknowledged rating is there (or a later one of the same pair, sent but not yet
    answered), and on RocksDB each story's score is the sum of its latest ratings (one
    atomic batch per upsert). On Redis Cluster a crash between an upsert's slots can leave
    the sum changed without the rating (core/ratings.h, "Crash consistency"): the next
    upsert of every pair (delayed at most the lease's 2 s where the dead server held it)
    repairs that, so then every story's score is the sum of its ratings on both stores."""
    from test_ratings import get_rating, put_rating, ratings_all
    from test_stories import create_story, fresh_url, get_story

    h = herald.start(backend)
    sids = [create_story(h, fresh_url())["id"] for _ in range(3)]
    subjects = [uid("rater") for _ in range(10)]
    base = 1_700_000_000_000
    acked = {}  # (subject, story) -> (time, score) of its latest acknowledged upsert
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def writer(k):
        s, i = requests.Session(), 0
        while not stop.is_set():
            subj, sid, score = subjects[(k + i) % len(subjects)], sids[(k * 7 + i) % 3], (1, -1, 0)[(k + i) % 3]
            t = base + i * 10 + k  # distinct times: the latest of a pair is well defined
            try:
                r = put_rating(h, subj, sid, {"score": score, "time": t}, s)
            except requests.exceptions.RequestException:
                break  # the server is gone
            if r.status_code != 200:
                errors.append(f"{r.status_code} {r.text[:200]}")
                break
            with lock:
                if acked.get((subj, sid), (0, 0))[0] < t:
                    acked[(subj, sid)] = (t, score)
            i += 1

    kill9_while_writing(h, writer, 6, stop, 1.5)
    assert not errors, f"upserts failed before the kill: {errors[:5]}"
    assert len(acked) >= 20, f"only {len(acked)} pairs rated in 1.5 s"

    restart_on_new_port(h)
    for (subj, sid), (t, score) in acked.items():
        r = get_rating(h, subj, sid)
        assert r.status_code == 200, f"{subj} on {sid}: acknowledged, gone after kill -9: {r.text}"
        got = r.json()
        assert got["time"] >= t, f"{subj} on {sid}: time {got['time']}, an older rating than the acknowledged {t}"
        if got["time"] == t:
            assert got["score"] == score, f"{subj} on {sid}: score {got['score']}, acknowledged {score}"

    def assert_scores_are_sums():
        for sid in sids:
            latest = ratings_all(h, f"/api/v1/stories/{sid}/ratings")
            assert len({x["subject"] for x in latest}) == len(latest), f"two entries of one rater: {latest}"
            assert get_story(h, sid)["score"] == sum(x["score"] for x in latest), \
                f"story {sid}: score {get_story(h, sid)['score']}, its ratings sum to {sum(x['score'] for x in latest)}"

    if backend == "rocksdb":
        assert_scores_are_sums()
    # Every pair takes a new upsert: a lease the killed server held delays it, never fails it.
    start = time.monotonic()
    for subj in subjects:
        for sid in sids:
            r = put_rating(h, subj, sid, {"score": 1, "time": base + 10**9})
            assert r.status_code == 200, f"{subj} on {sid} after the restart: {r.status_code} {r.text}"
    assert time.monotonic() - start < 20
    assert_scores_are_sums()
    for sid in sids:
        assert get_story(h, sid)["score"] == len(subjects), f"story {sid}: every rater's +1"


def test_kill9_under_story_writes_keeps_every_acknowledged_story_and_url(herald, backend):
    """Threads create stories and give each another URL until kill -9: after a restart
    every acknowledged story is found by its URL, with its content, and every
    acknowledged second URL leads to its story and is among its URLs."""
    from test_stories import find_story, fresh_url, post_story

    h = herald.start(backend)
    created, added = {}, {}  # url -> (id, content); second url -> id
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def writer(k):
        s, i, last = requests.Session(), 0, None
        while not stop.is_set():
            url, content = fresh_url(f"w{k}.example.com"), f"<p>{k}-{i}</p>"
            try:
                if last:
                    r = s.post(f"{h.url}/api/v1/stories/{last}/urls", json={"url": url}, timeout=30)
                else:
                    r = post_story(h, url, content, session=s)
            except requests.exceptions.RequestException:
                break  # the server is gone
            if r.status_code not in (200, 201):
                errors.append(f"{r.status_code} {r.text[:200]}")
                break
            with lock:
                if last:
                    added[url] = last
                else:
                    created[url] = (r.json()["id"], content)
            last = None if last else r.json()["id"]
            i += 1

    kill9_while_writing(h, writer, 4, stop, 1.5)
    assert not errors, f"writes failed before the kill: {errors[:5]}"
    assert len(created) >= 10 and len(added) >= 10, (len(created), len(added))

    restart_on_new_port(h)
    s = requests.Session()
    for url, (sid, content) in created.items():
        r = find_story(h, url, session=s)
        assert r.status_code == 200 and r.json()["id"] == sid, f"{url}: acknowledged, then {r.status_code} {r.text}"
        got = s.get(f"{h.url}/api/v1/stories/{sid}", timeout=30).json()
        assert got["content"] == content, f"{sid}: content {got['content']!r}, acknowledged {content!r}"
    for url, sid in added.items():
        r = find_story(h, url, session=s)
        assert r.status_code == 200 and r.json()["id"] == sid, f"{url}: an acknowledged URL of {sid}, then {r.text}"
        assert url in r.json()["urls"], f"{url}: acknowledged, missing from {sid}'s URLs {r.json()['urls']}"


def test_sync_mode(herald):
    """--sync (fsync'd WAL) serves and keeps acknowledged writes across kill -9."""
    h = herald.start("rocksdb", "--sync")
    obj = uid("obj")
    s = requests.Session()
    for i in range(50):
        assert h.add(obj, f"t{i}", session=s) == i + 1
    h.kill()
    restart_on_new_port(h)
    assert h.count(obj) == 50


def test_second_server_on_same_rocksdb_dir_refused(herald):
    """Two processes on one RocksDB directory would corrupt it: the second must refuse."""
    h1 = herald.start("rocksdb")
    h2 = herald.new("rocksdb", data_dir=h1.data_dir)
    try:
        p = subprocess.run(h2.cmdline(), capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("a second server started on a RocksDB directory in use")
    assert p.returncode != 0 and "ready" not in p.stdout, p.stdout
    assert p.stderr.strip(), "no message"
    assert h1.add(uid("o"), "t") == 1
