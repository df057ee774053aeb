-- wrk -s bench/counter_put.lua: PUT /api/v1/counter/{object} with a random 64-bit
-- token, objects Gaussian over 100 K ids (see counter_common.lua).
package.path = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "?.lua;" .. package.path
local c = require("counter_common")

setup = c.setup
init = c.init

function request()
   return wrk.format("PUT", c.prefix .. c.object(), c.headers, c.token())
end
