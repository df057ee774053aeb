-- Shared by counter_put.lua and counter_get.lua: the seed's load model.
--
-- Yandex's load test (seeds/003): "token is a random long value and object_id is an
-- int value between 0 and total number of objects chosen using Gaussian distribution
-- to model hot (popular) objects". Here: 100 K objects, mean 50 000, sd 10 000,
-- clamped to [0, 99 999]. Tunable by environment variables read in every wrk thread:
--   BENCH_OBJECTS (100000), BENCH_MEAN (50000), BENCH_SD (10000),
--   BENCH_COUNTER (unset: the default counter, /api/v1/counter/{object};
--                  set: /api/v1/counters/{counter}/{object}),
--   BENCH_TOKEN (unset: no Authorization header; set: "Bearer <value>").

local M = {}

local objects = tonumber(os.getenv("BENCH_OBJECTS") or "") or 100000
local mean    = tonumber(os.getenv("BENCH_MEAN") or "") or 50000
local sd      = tonumber(os.getenv("BENCH_SD") or "") or 10000
local counter = os.getenv("BENCH_COUNTER")
local token   = os.getenv("BENCH_TOKEN")

M.prefix = counter and ("/api/v1/counters/" .. counter .. "/") or "/api/v1/counter/"
M.headers = {}
if token and token ~= "" then
   M.headers["Authorization"] = "Bearer " .. token
end

local floor, sqrt, log, cos, random = math.floor, math.sqrt, math.log, math.cos, math.random
local two_pi = 2 * math.pi
local spare = nil

-- A standard normal deviate (Box-Muller, both values used).
local function gauss()
   if spare then
      local z = spare
      spare = nil
      return z
   end
   local u1, u2 = random(), random()
   if u1 < 1e-300 then u1 = 1e-300 end
   local r = sqrt(-2 * log(u1))
   spare = r * math.sin(two_pi * u2)
   return r * cos(two_pi * u2)
end

function M.object()
   local o = floor(mean + sd * gauss() + 0.5)
   if o < 0 then o = 0 elseif o >= objects then o = objects - 1 end
   return o
end

-- A random 64-bit token, as 16 hex digits (built from 16-bit pieces: LuaJIT's
-- math.random is exact on that range).
function M.token()
   return string.format("%04x%04x%04x%04x", random(0, 65535), random(0, 65535),
                        random(0, 65535), random(0, 65535))
end

-- Give every wrk thread its own random sequence.
local next_id = 0
function M.setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
end

function M.init()
   local id = thread_id or 0
   local t = os.time()
   math.randomseed(t * 1000 + id * 7919 + floor(os.clock() * 1e6) % 1000)
   for _ = 1, 10 do random() end
end

return M
