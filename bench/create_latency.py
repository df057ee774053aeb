#!/usr/bin/env python3
"""Latency of activity creates: N sequential POST /api/v1/activities with a foreign_id
over one keep-alive connection to a herald on 127.0.0.1:PORT (BENCHMARKS.md, "an activity's
create writes its foreign-id mapping first"). TAG makes the foreign ids of a run unique.

    python3 bench/create_latency.py PORT N TAG
"""
import http.client
import json
import statistics
import sys
import time


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    port, n, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    conn = http.client.HTTPConnection("127.0.0.1", port)
    lat = []
    for i in range(n):
        body = json.dumps({"actor": f"act{tag}{i % 50}", "verb": "post", "object": f"o{i}",
                           "foreign_id": f"{tag}-{i}"})
        start = time.perf_counter()
        conn.request("POST", "/api/v1/activities", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        lat.append(time.perf_counter() - start)
        if resp.status != 201:
            sys.exit(f"create {i}: HTTP {resp.status}")
    lat.sort()
    print(f"{n} creates: mean {statistics.mean(lat) * 1e3:.3f} ms, p50 {lat[n // 2] * 1e3:.3f} ms, "
          f"p99 {lat[int(n * 0.99)] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
