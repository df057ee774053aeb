-- wrk -s bench/reactions_post.lua: POST /api/v1/activities/{id}/reactions, a like
-- by a random user (u0..u{BENCH_USERS-1}) of a random activity from the file
-- BENCH_ACTIVITY_IDS (one id a line; bench/feeds_probe.py activities writes it).
-- Most pairs are new, so nearly every request is a new like (201); a pair liked
-- before answers 200 with the first like.
local users = tonumber(os.getenv("BENCH_USERS") or "100000")
local ids = {}

function init(args)
   math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
   for line in io.lines(os.getenv("BENCH_ACTIVITY_IDS")) do
      ids[#ids + 1] = line
   end
end

function request()
   local id = ids[math.random(1, #ids)]
   local body = '{"user":"u' .. math.random(0, users - 1) .. '","kind":"like"}'
   return wrk.format("POST", "/api/v1/activities/" .. id .. "/reactions",
                     {["Content-Type"] = "application/json"}, body)
end
