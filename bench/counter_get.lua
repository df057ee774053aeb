-- wrk -s bench/counter_get.lua: GET /api/v1/counter/{object}, objects Gaussian over
-- 100 K ids (see counter_common.lua).
package.path = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "?.lua;" .. package.path
local c = require("counter_common")

setup = c.setup
init = c.init

function request()
   return wrk.format("GET", c.prefix .. c.object(), c.headers)
end
