-- wrk -s bench/friends_reads.lua: POST /api/v1/users/{uid}/friends-reads with a
-- feed of 100 URLs, on the dataset bench/reading_load built (bench/reading.sh
-- sets the variables):
--   BENCH_FEEDS_FILE  request bodies, one a line ({"urls": [...]}; the loader's
--                     feeds.txt); BENCH_FEEDS_FROM..BENCH_FEEDS_TO (1-based
--                     lines) picks a kind of feed: 1..200 "zipf", 201..400 "tail"
--   BENCH_USERS_FILE  user ids, one a line (query_users.txt: 405..495 friends);
--                     or BENCH_USER, one user for every request ("worst")
-- Each request picks a user and a feed uniformly.

local random = math.random
local feeds_file, users_file = os.getenv("BENCH_FEEDS_FILE"), os.getenv("BENCH_USERS_FILE")
local one_user = os.getenv("BENCH_USER")
local from = tonumber(os.getenv("BENCH_FEEDS_FROM") or "") or 1
local to = tonumber(os.getenv("BENCH_FEEDS_TO") or "") or 200
local headers = {["Content-Type"] = "application/json"}
local feeds, users = {}, {}

local function lines(path)
   local t = {}
   local f = assert(io.open(path, "r"))
   for line in f:lines() do
      if #line > 0 then t[#t + 1] = line end
   end
   f:close()
   return t
end

function init()
   math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
   if not feeds_file then error("BENCH_FEEDS_FILE is not set (bench/reading.sh sets it)") end
   local all = lines(feeds_file)
   for i = from, math.min(to, #all) do feeds[#feeds + 1] = all[i] end
   if #feeds == 0 then error(feeds_file .. ": no feeds in lines " .. from .. ".." .. to) end
   if one_user and one_user ~= "" then
      users = {one_user}
   else
      if not users_file then error("set BENCH_USERS_FILE or BENCH_USER") end
      users = lines(users_file)
   end
end

function request()
   local path = "/api/v1/users/" .. users[random(1, #users)] .. "/friends-reads"
   return wrk.format("POST", path, headers, feeds[random(1, #feeds)])
end
