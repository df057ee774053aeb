-- wrk -s bench/ratings_put.lua: PUT /api/v1/ratings/{subject}/{object} {"score": n}
-- on the dataset bench/stories_load built (bench/stories.sh sets the variables):
--   BENCH_OBJECTS_FILE  story ids, one a line, drawn from the dataset's Zipf over
--                       stories (stories_load's put_objects.txt): a uniform pick
--                       from it is a Zipf pick of a story
--   BENCH_MEMBERS       subjects are u0 .. u{BENCH_MEMBERS-1}, uniform (100000)
--   BENCH_TOKEN         unset: no Authorization header; set: "Bearer <value>"
-- Scores 1 (60 %), -1 (15 %), 0 (25 %); no "time", so the server's clock: every
-- PUT is the subject's latest rating of the story and is applied.

local floor, random = math.floor, math.random

local members = tonumber(os.getenv("BENCH_MEMBERS") or "") or 100000
local file    = os.getenv("BENCH_OBJECTS_FILE")
local token   = os.getenv("BENCH_TOKEN")

local headers = {["Content-Type"] = "application/json"}
if token and token ~= "" then
   headers["Authorization"] = "Bearer " .. token
end

local objects = {}
local n_objects = 0
local bodies = {'{"score":1}', '{"score":-1}', '{"score":0}'}

local next_id = 0
function setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
end

function init()
   local id = thread_id or 0
   math.randomseed(os.time() * 1000 + id * 7919 + floor(os.clock() * 1e6) % 1000)
   for _ = 1, 10 do random() end
   if not file then
      error("BENCH_OBJECTS_FILE is not set (bench/stories.sh sets it)")
   end
   local f = assert(io.open(file, "r"))
   for line in f:lines() do
      if #line > 0 then
         n_objects = n_objects + 1
         objects[n_objects] = line
      end
   end
   f:close()
   if n_objects == 0 then
      error(file .. " holds no story ids")
   end
end

function request()
   local subject = "u" .. random(0, members - 1)
   local object = objects[random(1, n_objects)]
   local x = random(1, 100)
   local body = x <= 60 and bodies[1] or (x <= 75 and bodies[2] or bodies[3])
   return wrk.format("PUT", "/api/v1/ratings/" .. subject .. "/" .. object, headers, body)
end
