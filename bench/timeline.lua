-- wrk -s bench/timeline.lua: GET /api/v1/users/u{N}/timeline?limit=20 for users
-- drawn uniformly from the loaded dataset (BENCH_USERS users, u0..u{N-1}).
local users = tonumber(os.getenv("BENCH_USERS") or "100000")
-- BENCH_TIMELINE_QUERY: more of the query string, e.g. "&enrich=true"
local extra = os.getenv("BENCH_TIMELINE_QUERY") or ""

function init(args)
   math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
end

function request()
   return wrk.format("GET", "/api/v1/users/u" .. math.random(0, users - 1) .. "/timeline?limit=20" .. extra)
end
