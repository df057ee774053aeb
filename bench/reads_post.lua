-- wrk -s bench/reads_post.lua: POST /api/v1/users/{uid}/reads {"url": ...} on the
-- dataset bench/reading_load built: users u0..u{BENCH_READERS-1} (the heavy
-- readers, who all share), URLs https://rec.example/a/{k} (a selected site of
-- its own, so that the friends-reads answers checked against PostgreSQL do not
-- move) with k drawn log-uniformly from 1..BENCH_URLS (a continuous Zipf with
-- exponent 1, like the loader's), no "time" (the server's clock).

local floor, random = math.floor, math.random
local readers = tonumber(os.getenv("BENCH_READERS") or "") or 5000
local urls = tonumber(os.getenv("BENCH_URLS") or "") or 2000000
local headers = {["Content-Type"] = "application/json"}

function init()
   math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
end

function request()
   local k = floor(urls ^ random()) - 1
   local body = '{"url":"https://rec.example/a/' .. k .. '"}'
   return wrk.format("POST", "/api/v1/users/u" .. random(0, readers - 1) .. "/reads", headers, body)
end
