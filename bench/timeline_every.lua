-- wrk -s bench/timeline_every.lua: the same page as bench/timeline.lua, GET
-- /api/v1/users/u{N}/timeline?limit=20, for every user of the dataset in turn
-- (BENCH_USERS users, u0..u{N-1}; each wrk thread takes every WRK_THREADS-th
-- user from its own start, and starts over at the end). Used once before a
-- measurement, so that every reader has read their first page once (herald keeps
-- first pages in memory: the memos' share of memory).
local users = tonumber(os.getenv("BENCH_USERS") or "100000")
local threads = tonumber(os.getenv("BENCH_WRK_THREADS") or "2")
local counter = 0

function setup(thread)
   thread:set("start", counter)
   counter = counter + 1
end

local next_user

function init(args)
   next_user = start or 0
end

function request()
   local u = next_user
   next_user = next_user + threads
   if next_user >= users then next_user = next_user - users end
   return wrk.format("GET", "/api/v1/users/u" .. u .. "/timeline?limit=20")
end
