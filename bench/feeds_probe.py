"""bench/feeds_probe.py — two measurements of bench/feeds.sh against a running
herald holding a `herald load` dataset of N users (u0..u{N-1}).

  cost URL N PAGES    store round trips (batches) and operations per home
                      timeline page of 20 read from the store, from /metrics
                      before and after PAGES pages of random users, read one at
                      a time (where herald keeps first pages in memory, the
                      store's work is divided by the pages it read, its misses)
  profiles URL N 0    give every dataset user a small profile (for enrich=true)
  activities URL N K  create K activities by random dataset users and print
                      their ids, one a line (bench/reactions_post.lua likes them)
  delay URL N PROBES  create-to-visible delay for an actor with 450 followers:
                      a fresh actor is followed by 450 dataset users; then, PROBES
                      times, an activity is created and the timeline of the
                      follower written LAST by the fan-out (followers are walked
                      in follow order) is polled until it shows it
"""
import random
import re
import statistics
import sys
import time
import uuid

import requests

API = "/api/v1"


def metrics(s, url):
    text = s.get(f"{url}/metrics").text
    out = {}
    for name, value in re.findall(r"^(herald_store_batches_total|herald_store_ops_total\{op=\"\w+\"\}"
                                  r"|herald_timeline_cache_misses_total) (\S+)$", text, re.M):
        out[name] = float(value)
    return out


def cost(url, n, pages):
    s = requests.Session()
    before = metrics(s, url)
    for _ in range(pages):
        r = s.get(f"{url}{API}/users/u{random.randrange(n)}/timeline", params={"limit": 20})
        r.raise_for_status()
    after = metrics(s, url)
    misses = "herald_timeline_cache_misses_total"
    read = after.pop(misses, pages) - before.pop(misses, 0)  # pages read from the store
    delta = {k: (after[k] - before.get(k, 0)) / max(read, 1) for k in after}
    # the two /metrics reads are not store work; everything else is the pages'
    batches = delta.pop("herald_store_batches_total")
    ops = {re.search(r'op="(\w+)"', k).group(1): v for k, v in delta.items() if v > 0.005}
    detail = ", ".join(f"{k} {v:.1f}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1]))
    print(f"{batches:.2f} round trips, {sum(ops.values()):.1f} ops per page read from the store ({detail}); "
          f"{read:.0f} of {pages} pages read from the store")


def delay(url, n, probes):
    s = requests.Session()
    actor = f"probe-{uuid.uuid4().hex[:8]}"
    followers = random.sample(range(n), 450)
    for f in followers:
        s.put(f"{url}{API}/users/u{f}/follows/{actor}").raise_for_status()
    last = f"u{followers[-1]}"
    time.sleep(2)  # the follows' own jobs
    delays = []
    for _ in range(probes):
        t0 = time.monotonic()
        r = s.post(f"{url}{API}/activities", json={"actor": actor, "verb": "post"})
        r.raise_for_status()
        aid = r.json()["id"]
        while True:
            tl = s.get(f"{url}{API}/users/{last}/timeline", params={"limit": 1}).json()["activities"]
            if tl and tl[0]["id"] == aid:
                break
            if time.monotonic() - t0 > 30:
                raise SystemExit(f"activity {aid} not visible after 30 s")
        delays.append((time.monotonic() - t0) * 1000)
    delays.sort()
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    print(f"p50 {statistics.median(delays):.1f} ms, p99 {p99:.1f} ms ({probes} probes)")


def activities(url, n, k):
    s = requests.Session()
    for _ in range(k):
        r = s.post(f"{url}{API}/activities", json={"actor": f"u{random.randrange(n)}", "verb": "photo"})
        r.raise_for_status()
        print(r.json()["id"])


def profiles(url, n, _):
    s = requests.Session()
    for u in range(n):
        r = s.put(f"{url}{API}/users/u{u}/profile", json={"name": f"User {u}", "avatar": f"https://example.com/{u}.png"})
        r.raise_for_status()


if __name__ == "__main__":
    what, url, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    {"cost": cost, "delay": delay, "activities": activities, "profiles": profiles}[what](url, n, k)
