/* redis/scripts.c — the Lua scripts of the Redis backend; see
 * redis/scripts.h. The scripts of a type that spans two keys share
 * preludes: KEYS_PRELUDE (K and E), then DISTINCT_PRELUDE (the layout of a
 * distinct counter, its metadata, its buckets) or PSET_PRELUDE (a packed
 * set's marker and key expiry); C string concatenation glues them to each
 * script, so each is self-contained for Redis. Lua's own string `<` follows
 * the server's locale, so member order is compared byte by byte (see
 * `before` in the zrange script). */
#include "store/redis/scripts.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The Lua stays as written: one source line per C line. */
/* clang-format off */
#define KEYS_PRELUDE \
    "-- KEYS[1] = K, KEYS[2] = E: K's companion zset, in K's slot (see redis/redis.c).\n" \
    "local K, E = KEYS[1], KEYS[2]\n" \
    "local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'\n" \
    "\n" \
    "-- Integers for commands: Lua would print big ones as 1.7e+12.\n" \
    "local function int(x) return string.format('%d', x) end\n" \
    "\n" \

#define DISTINCT_PRELUDE KEYS_PRELUDE \
    "-- A distinct counter at K (see redis/redis.c for the layout); E is its exact\n" \
    "-- set, ARGV[1] = P (prefix of the bucket keys).\n" \
    "local P = ARGV[1]\n" \
    "local MARK = 'herald:distinct:1'\n" \
    "local MAX_BUCKETS = 1024\n" \
    "\n" \
    "-- The metadata list of K; nil when K is missing, false when K holds\n" \
    "-- another type.\n" \
    "local function read_meta()\n" \
    "  local t = redis.call('TYPE', K)['ok']\n" \
    "  if t == 'none' then return nil end\n" \
    "  if t ~= 'list' then return false end\n" \
    "  local v = redis.call('LRANGE', K, 0, -1)\n" \
    "  if v[1] ~= MARK then return false end\n" \
    "  return {mode = v[2], gen = v[3], w = tonumber(v[4]), lo = tonumber(v[5]), hi = tonumber(v[6])}\n" \
    "end\n" \
    "\n" \
    "local function write_meta(m)\n" \
    "  redis.call('DEL', K)\n" \
    "  redis.call('RPUSH', K, MARK, m.mode, m.gen, int(m.w), int(m.lo), int(m.hi))\n" \
    "end\n" \
    "\n" \
    "local function bucket(m, i) return P .. '\\0h' .. m.gen .. ':' .. int(i) end\n" \
    "\n" \
    "-- Bucket [i*W, (i+1)*W) is alive while now < (i+1)*W + ttl.\n" \
    "local function alive_from(m, now, ttl)\n" \
    "  return math.max(m.lo, math.floor((now - ttl) / m.w))\n" \
    "end\n" \
    "\n" \
    "-- The keys of buckets from..hi (the newest MAX_BUCKETS at most: older ones\n" \
    "-- have expired by themselves).\n" \
    "local function bucket_keys(m, from)\n" \
    "  local keys = {}\n" \
    "  for i = math.max(from, m.hi - MAX_BUCKETS + 1), m.hi do keys[#keys + 1] = bucket(m, i) end\n" \
    "  return keys\n" \
    "end\n" \
    "\n" \
    "local function delete_all(m)\n" \
    "  redis.call('DEL', K, E)\n" \
    "  if m.mode == 'sketch' then\n" \
    "    local keys = bucket_keys(m, m.lo)\n" \
    "    if #keys > 0 then redis.call('DEL', unpack(keys)) end\n" \
    "  end\n" \
    "end\n" \
    "\n" \
    "-- The counter if anything in it is alive at now (expired exact members\n" \
    "-- pruned); nil when missing or wholly expired (then deleted); false when K\n" \
    "-- holds another type.\n" \
    "local function load_live(now, ttl)\n" \
    "  local m = read_meta()\n" \
    "  if not m then return m end\n" \
    "  if m.mode == 'exact' then\n" \
    "    redis.call('ZREMRANGEBYSCORE', E, '-inf', int(now))\n" \
    "    if redis.call('ZCARD', E) > 0 then return m end\n" \
    "  elseif alive_from(m, now, ttl) <= m.hi then\n" \
    "    return m\n" \
    "  end\n" \
    "  delete_all(m)\n" \
    "  return nil\n" \
    "end\n" \
    "\n" \
    "local function count_sketch(m, now, ttl)\n" \
    "  local keys = bucket_keys(m, alive_from(m, now, ttl))\n" \
    "  if #keys == 0 then return 0 end\n" \
    "  return redis.call('PFCOUNT', unpack(keys))\n" \
    "end\n" \

/* A packed set (see redis/redis.c): K a Redis set holding one marker, E its
 * members. Used after KEYS_PRELUDE. */
#define PSET_PRELUDE \
    "-- A packed set at K: K is a set holding one marker, PSET_MARK, or\n" \
    "-- PSET_MARK .. ' at=' .. the key expiry hr_expire gave it; E maps each\n" \
    "-- member (8 bytes) to its expire_at_ms ('inf': never). A member is in the\n" \
    "-- set while now < its score.\n" \
    "local PSET_MARK = 'herald:pset:1'\n" \
    "-- From this time on (the year 33658) Redis' key expiry is not used.\n" \
    "local FAR = 1e15\n" \
    "\n" \
    "-- The set at K: nil when K is missing, false when K holds another type,\n" \
    "-- else {at = hr_expire's time (string) or nil}.\n" \
    "local function read_pset()\n" \
    "  local t = redis.call('TYPE', K)['ok']\n" \
    "  if t == 'none' then return nil end\n" \
    "  if t ~= 'set' then return false end\n" \
    "  local v = redis.call('SMEMBERS', K)\n" \
    "  if #v ~= 1 then return false end\n" \
    "  if v[1] == PSET_MARK then return {} end\n" \
    "  local at = string.match(v[1], '^herald:pset:1 at=(%d+)$')\n" \
    "  if not at then return false end\n" \
    "  return {at = at}\n" \
    "end\n" \
    "\n" \
    "local function write_mark(p)\n" \
    "  redis.call('DEL', K)\n" \
    "  if p.at then\n" \
    "    redis.call('SADD', K, PSET_MARK .. ' at=' .. p.at)\n" \
    "  else\n" \
    "    redis.call('SADD', K, PSET_MARK)\n" \
    "  end\n" \
    "end\n" \
    "\n" \
    "-- After a write (expired members pruned): delete the set if it has no\n" \
    "-- member left, else let K and E expire when the set must be gone: at\n" \
    "-- hr_expire's time or when its last member expires, whichever comes first.\n" \
    "local function settle(p)\n" \
    "  local top = redis.call('ZRANGE', E, -1, -1, 'WITHSCORES')\n" \
    "  if #top == 0 then\n" \
    "    redis.call('DEL', K, E)\n" \
    "    return\n" \
    "  end\n" \
    "  local at = tonumber(top[2])\n" \
    "  if p.at and tonumber(p.at) < at then at = tonumber(p.at) end\n" \
    "  if at >= FAR then\n" \
    "    redis.call('PERSIST', K)\n" \
    "    redis.call('PERSIST', E)\n" \
    "  elseif redis.call('PEXPIRETIME', K) ~= at then\n" \
    "    redis.call('PEXPIREAT', K, int(at))\n" \
    "    redis.call('PEXPIREAT', E, int(at))\n" \
    "  end\n" \
    "end\n" \
    "\n" \

static const char zrange_lua[] =
    "-- hr_zrange. KEYS[1]: the sorted set. ARGV: reverse (0/1), min, max,\n"
    "-- has_cursor (0/1), cursor_score, cursor_member, offset, limit.\n"
    "-- Returns {more (0/1), member1, score1, member2, score2, ...}.\n"
    "local K = KEYS[1]\n"
    "local reverse, has_cursor = ARGV[1] == '1', ARGV[4] == '1'\n"
    "local min, max, cs = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])\n"
    "local cm, offset, limit = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])\n"
    "\n"
    "local function int(x) return string.format('%d', x) end\n"
    "\n"
    "-- Is a before b in Redis' member order (memcmp, shorter first on a common\n"
    "-- prefix)? Lua's < on strings follows the server's locale: not usable.\n"
    "local function before(a, b)\n"
    "  for i = 1, math.min(#a, #b) do\n"
    "    local x, y = string.byte(a, i), string.byte(b, i)\n"
    "    if x ~= y then return x < y end\n"
    "  end\n"
    "  return #a < #b\n"
    "end\n"
    "\n"
    "-- The rank of the first entry after the cursor (strict) or at-or-after it,\n"
    "-- in (score, member) order. The cursor entry itself may be gone or rescored.\n"
    "local function cursor_rank(strict)\n"
    "  local first = redis.call('ZCOUNT', K, '-inf', '(' .. ARGV[5])\n"
    "  local past = redis.call('ZCOUNT', K, '-inf', ARGV[5])\n"
    "  -- Ranks [first, past) hold the entries scored cs, in member order.\n"
    "  local r = redis.call('ZRANK', K, cm)\n"
    "  if r and r >= first and r < past then\n"
    "    if strict then return r + 1 end\n"
    "    return r\n"
    "  end\n"
    "  local lo, hi = first, past\n"
    "  while lo < hi do\n"
    "    local mid = math.floor((lo + hi) / 2)\n"
    "    local x = redis.call('ZRANGE', K, int(mid), int(mid))[1]\n"
    "    if before(cm, x) or (not strict and x == cm) then hi = mid else lo = mid + 1 end\n"
    "  end\n"
    "  return lo\n"
    "end\n"
    "\n"
    "local out = {0}\n"
    "local function full() return #out - 1 == 2 * limit end\n"
    "if not reverse then\n"
    "  local start\n"
    "  if has_cursor and cs >= min then\n"
    "    start = cursor_rank(true)\n"
    "  else\n"
    "    start = redis.call('ZCOUNT', K, '-inf', '(' .. ARGV[2])\n"
    "  end\n"
    "  start = start + offset\n"
    "  -- limit + 1 entries: the last one only tells whether there are more.\n"
    "  local got = redis.call('ZRANGE', K, int(start), int(start + limit), 'WITHSCORES')\n"
    "  for x = 1, #got, 2 do\n"
    "    if tonumber(got[x + 1]) > max then break end\n"
    "    if full() then\n"
    "      out[1] = 1\n"
    "      break\n"
    "    end\n"
    "    out[#out + 1] = got[x]\n"
    "    out[#out + 1] = got[x + 1]\n"
    "  end\n"
    "else\n"
    "  local stop\n"
    "  if has_cursor and cs <= max then\n"
    "    stop = cursor_rank(false) - 1\n"
    "  else\n"
    "    stop = redis.call('ZCOUNT', K, '-inf', ARGV[3]) - 1\n"
    "  end\n"
    "  stop = stop - offset\n"
    "  if stop >= 0 then\n"
    "    local got = redis.call('ZRANGE', K, int(math.max(0, stop - limit)), int(stop), 'WITHSCORES')\n"
    "    for x = #got - 1, 1, -2 do\n"
    "      if tonumber(got[x + 1]) < min then break end\n"
    "      if full() then\n"
    "        out[1] = 1\n"
    "        break\n"
    "      end\n"
    "      out[#out + 1] = got[x]\n"
    "      out[#out + 1] = got[x + 1]\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return out\n";

static const char dadd_lua[] = DISTINCT_PRELUDE
    "-- hr_dadd. ARGV: P, member, now_ms, ttl_ms, exact_limit. Returns the count.\n"
    "local member, now, ttl, limit = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "\n"
    "-- Fold every live member of the exact set into the HLL of the bucket of\n"
    "-- its last add time (its expiry - ttl).\n"
    "local function to_sketch(m)\n"
    "  m.mode, m.w = 'sketch', math.max(1000, math.floor(ttl / 16))\n"
    "  local all = redis.call('ZRANGE', E, 0, -1, 'WITHSCORES')\n"
    "  local by_bucket = {}\n"
    "  m.lo, m.hi = nil, nil\n"
    "  for x = 1, #all, 2 do\n"
    "    local i = math.floor((tonumber(all[x + 1]) - ttl) / m.w)\n"
    "    local list = by_bucket[i]\n"
    "    if not list then\n"
    "      list = {}\n"
    "      by_bucket[i] = list\n"
    "    end\n"
    "    list[#list + 1] = all[x]\n"
    "    if not m.lo or i < m.lo then m.lo = i end\n"
    "    if not m.hi or i > m.hi then m.hi = i end\n"
    "  end\n"
    "  for i, members in pairs(by_bucket) do\n"
    "    local b = bucket(m, i)\n"
    "    for c = 1, #members, 1000 do\n"
    "      redis.call('PFADD', b, unpack(members, c, math.min(c + 999, #members)))\n"
    "    end\n"
    "    redis.call('PEXPIRE', b, int((i + 1) * m.w + ttl - now))\n"
    "  end\n"
    "  redis.call('DEL', E)\n"
    "  write_meta(m)\n"
    "end\n"
    "\n"
    "local m = load_live(now, ttl)\n"
    "if m == false then return redis.error_reply(WRONGTYPE) end\n"
    "if m == nil then\n"
    "  -- A new counter. Its generation names its buckets, so buckets left by an\n"
    "  -- earlier counter of the same key (overwritten by hr_put) are never read.\n"
    "  local t = redis.call('TIME')\n"
    "  m = {mode = 'exact', gen = t[1] .. string.format('%06d', tonumber(t[2])), w = 0, lo = 0, hi = 0}\n"
    "  redis.call('DEL', E)\n"
    "  write_meta(m)\n"
    "end\n"
    "\n"
    "if m.mode == 'exact' then\n"
    "  redis.call('ZADD', E, int(now + ttl), member)\n"
    "  local n = redis.call('ZCARD', E)\n"
    "  if n <= limit then\n"
    "    local life = tonumber(redis.call('ZRANGE', E, -1, -1, 'WITHSCORES')[2]) - now\n"
    "    redis.call('PEXPIRE', E, int(life))\n"
    "    redis.call('PEXPIRE', K, int(life))\n"
    "    return n\n"
    "  end\n"
    "  to_sketch(m)\n"
    "else\n"
    "  local i = math.floor(now / m.w)\n"
    "  local b = bucket(m, i)\n"
    "  redis.call('PFADD', b, member)\n"
    "  redis.call('PEXPIRE', b, int((i + 1) * m.w + ttl - now))\n"
    "  m.lo = math.min(alive_from(m, now, ttl), i)\n"
    "  m.hi = math.max(m.hi, i)\n"
    "  write_meta(m)\n"
    "end\n"
    "redis.call('PEXPIRE', K, int((m.hi + 1) * m.w + ttl - now))\n"
    "return count_sketch(m, now, ttl)\n";

static const char dcount_lua[] = DISTINCT_PRELUDE
    "-- hr_dcount. ARGV: P, now_ms, ttl_ms. Returns the count.\n"
    "local now, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local m = load_live(now, ttl)\n"
    "if m == false then return redis.error_reply(WRONGTYPE) end\n"
    "if m == nil then return 0 end\n"
    "if m.mode == 'exact' then return redis.call('ZCARD', E) end\n"
    "return count_sketch(m, now, ttl)\n";

static const char del_lua[] = DISTINCT_PRELUDE
    "-- hr_del of a key of any type. ARGV: P. Returns 1 if a key was deleted.\n"
    "local m = read_meta()\n"
    "if m then\n"
    "  delete_all(m)\n"
    "  return 1\n"
    "end\n"
    "local n = redis.call('DEL', K)\n"
    "-- E: a packed set's members, or what a packed set or distinct counter left\n"
    "-- when hr_put replaced it.\n"
    "redis.call('DEL', E)\n"
    "return n\n";

static const char expire_lua[] = DISTINCT_PRELUDE PSET_PRELUDE
    "-- hr_expire of a key of any type. ARGV: P, expire_at_ms (0: persist).\n"
    "-- Returns 1 if the key exists.\n"
    "local at = ARGV[2]\n"
    "if redis.call('EXISTS', K) == 0 then return 0 end\n"
    "local p = read_pset()\n"
    "if p then\n"
    "  -- Kept in the marker, so that later writes keep it (settle).\n"
    "  if at == '0' then p.at = nil else p.at = at end\n"
    "  write_mark(p)\n"
    "  settle(p)\n"
    "  return 1\n"
    "end\n"
    "if at == '0' then\n"
    "  redis.call('PERSIST', K)\n"
    "  return 1\n"
    "end\n"
    "local m = read_meta()\n"
    "redis.call('PEXPIREAT', K, at)\n"
    "if m then\n"
    "  -- Sub-keys keep their own expiry when it comes sooner.\n"
    "  redis.call('PEXPIREAT', E, at, 'LT')\n"
    "  if m.mode == 'sketch' then\n"
    "    for _, b in ipairs(bucket_keys(m, m.lo)) do redis.call('PEXPIREAT', b, at, 'LT') end\n"
    "  end\n"
    "end\n"
    "return 1\n";

static const char pset_add_lua[] = KEYS_PRELUDE PSET_PRELUDE
    "-- hr_pset_add. ARGV: now_ms, member, expire_at_ms ('inf': never).\n"
    "-- Returns 1 if the member was not in the set.\n"
    "local now, member, score = ARGV[1], ARGV[2], ARGV[3]\n"
    "local p = read_pset()\n"
    "if p == false then return redis.error_reply(WRONGTYPE) end\n"
    "if p == nil then\n"
    "  -- A new set. E may be left from one that hr_put replaced.\n"
    "  redis.call('DEL', E)\n"
    "  p = {}\n"
    "  write_mark(p)\n"
    "else\n"
    "  redis.call('ZREMRANGEBYSCORE', E, '-inf', now)\n"
    "end\n"
    "local new\n"
    "if score ~= 'inf' and tonumber(score) <= tonumber(now) then\n"
    "  -- Expired already: the member leaves the set.\n"
    "  new = 1 - redis.call('ZREM', E, member)\n"
    "else\n"
    "  new = redis.call('ZADD', E, score, member)\n"
    "end\n"
    "settle(p)\n"
    "return new\n";

static const char pset_rem_lua[] = KEYS_PRELUDE PSET_PRELUDE
    "-- hr_pset_rem. ARGV: now_ms, member. Returns 1 if it was in the set.\n"
    "local p = read_pset()\n"
    "if p == false then return redis.error_reply(WRONGTYPE) end\n"
    "if p == nil then return 0 end\n"
    "redis.call('ZREMRANGEBYSCORE', E, '-inf', ARGV[1])\n"
    "local n = redis.call('ZREM', E, ARGV[2])\n"
    "settle(p)\n"
    "return n\n";

static const char del_if_equal_lua[] =
    "-- hr_del_if_equal. KEYS: K. ARGV: the value. Returns 1 if K held it and\n"
    "-- is deleted. GET of another type fails with WRONGTYPE, as the op should.\n"
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
    "return 0\n";

static const char step_lua[] =
    "-- A guard and the ops after it (store.h, hr_zguard; redis/step.c). KEYS:\n"
    "-- each op's key. ARGV: three per op: its code (g guard, a zadd, i zincr,\n"
    "-- r zrem, s zscore, p put of a value), member (a put's value), number\n"
    "-- (a guard's was, '' for none; a score; a delta). Returns three per op:\n"
    "-- rc (0 ok, 1 not found, 2 not run: a guard before it did not hold,\n"
    "-- 3 error), num, and the score\n"
    "-- (or the error) as a string. pcall: an op on a key of another type\n"
    "-- fails alone, as on RocksDB, and the step's writes before it stay.\n"
    "local out, held = {}, true\n"
    "local function put(rc, num, s) out[#out + 1] = rc; out[#out + 1] = num; out[#out + 1] = s end\n"
    "for i = 1, #KEYS do\n"
    "  local k, code, m, v = KEYS[i], ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i]\n"
    "  local r\n"
    "  if not held then put(2, 0, '')\n"
    "  else\n"
    "    if code == 'g' or code == 's' then r = redis.pcall('ZSCORE', k, m)\n"
    "    elseif code == 'a' then r = redis.pcall('ZADD', k, v, m)\n"
    "    elseif code == 'i' then r = redis.pcall('ZINCRBY', k, v, m)\n"
    "    elseif code == 'p' then r = redis.pcall('SET', k, m)\n"
    "    else r = redis.pcall('ZREM', k, m) end\n"
    "    if type(r) == 'table' and r.err then\n"
    "      put(3, 0, r.err)\n"
    "      if code == 'g' then held = false end\n"
    "    elseif code == 'g' then\n"
    "      local ok\n"
    "      if v == '' then ok = not r else ok = r and tonumber(r) == tonumber(v) end\n"
    "      put(r and 0 or 1, ok and 1 or 0, r or '')\n"
    "      held = ok and true or false\n"
    "    elseif code == 's' then put(r and 0 or 1, 0, r or '')\n"
    "    elseif code == 'p' then put(0, 1, '')\n"
    "    elseif code == 'i' then put(0, 0, r)\n"
    "    else put(0, r, '') end\n"
    "  end\n"
    "end\n"
    "return out\n";

static const char tltrim_lua[] =
    "-- hr_tltrim. KEYS[1]: the time list's sorted set. ARGV: the last rank to\n"
    "-- remove (-(keep + 1): all but the keep highest), older_than_ms or ''.\n"
    "-- Returns how many entries went.\n"
    "local K = KEYS[1]\n"
    "local n = 0\n"
    "if ARGV[2] ~= '' then n = redis.call('ZREMRANGEBYSCORE', K, '-inf', '(' .. ARGV[2]) end\n"
    "return n + redis.call('ZREMRANGEBYRANK', K, 0, ARGV[1])\n";

static const char qclaim_lua[] =
    "-- hr_qclaim. KEYS[1]: the queue's stream. ARGV: consumer, max, lease_ms.\n"
    "-- Returns {id1, payload1, deliveries1, id2, ...}, oldest first: first the\n"
    "-- jobs whose lease ran out (pending and idle for lease_ms), then new ones.\n"
    "local K, consumer, max, lease = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3]\n"
    "local G = 'herald'\n"
    "if redis.call('EXISTS', K) == 0 then return {} end\n"
    "-- The group starts at 0: every job pushed before the first claim is new to\n"
    "-- it. BUSYGROUP (it exists) is the usual answer, hence pcall.\n"
    "redis.pcall('XGROUP', 'CREATE', K, G, '0')\n"
    "local out, n = {}, 0\n"
    "local function add(entry, deliveries)\n"
    "  local f = entry[2]\n"
    "  for i = 1, #f, 2 do\n"
    "    if f[i] == 'p' then\n"
    "      out[#out + 1] = entry[1]\n"
    "      out[#out + 1] = f[i + 1]\n"
    "      out[#out + 1] = deliveries\n"
    "      n = n + 1\n"
    "      return\n"
    "    end\n"
    "  end\n"
    "end\n"
    "-- XAUTOCLAIM walks the pending list in id order (oldest first) and may stop\n"
    "-- early with a cursor; it counts the delivery, which XPENDING then reads.\n"
    "local start = '0-0'\n"
    "repeat\n"
    "  local r = redis.call('XAUTOCLAIM', K, G, consumer, lease, start, 'COUNT', max - n)\n"
    "  start = r[1]\n"
    "  for _, e in ipairs(r[2]) do\n"
    "    local p = redis.call('XPENDING', K, G, e[1], e[1], 1)\n"
    "    add(e, p[1] and p[1][4] or 2)\n"
    "  end\n"
    "until start == '0-0' or n >= max\n"
    "if n < max then\n"
    "  local r = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', max - n, 'STREAMS', K, '>')\n"
    "  if r then\n"
    "    for _, e in ipairs(r[1][2]) do add(e, 1) end\n"
    "  end\n"
    "end\n"
    "return out\n";

/* clang-format on */

static rs_script scripts[RS_COUNT_] = {
    [RS_ZRANGE] = {"zrange", zrange_lua, ""},
    [RS_DADD] = {"dadd", dadd_lua, ""},
    [RS_DCOUNT] = {"dcount", dcount_lua, ""},
    [RS_DEL] = {"del", del_lua, ""},
    [RS_EXPIRE] = {"expire", expire_lua, ""},
    [RS_PSET_ADD] = {"pset_add", pset_add_lua, ""},
    [RS_PSET_REM] = {"pset_rem", pset_rem_lua, ""},
    [RS_TLTRIM] = {"tltrim", tltrim_lua, ""},
    [RS_QCLAIM] = {"qclaim", qclaim_lua, ""},
    [RS_DEL_IF_EQUAL] = {"del_if_equal", del_if_equal_lua, ""},
    [RS_STEP] = {"step", step_lua, ""},
};
static const char *bodies[RS_COUNT_];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* EVALSHA names a script by the SHA1 of its body, in hex. */
static void init(void) {
    for (int i = 0; i < RS_COUNT_; i++) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_Digest(scripts[i].body, strlen(scripts[i].body), md, &len, EVP_sha1(), NULL);
        for (unsigned k = 0; k < len && k < 20; k++)
            snprintf(scripts[i].sha + 2 * k, 3, "%02x", md[k]);
        bodies[i] = scripts[i].body;
    }
}

const rs_script *rs_script_get(rs_id id) {
    pthread_once(&init_once, init);
    return &scripts[id];
}

const char *const *rs_script_bodies(size_t *n) {
    pthread_once(&init_once, init);
    *n = RS_COUNT_;
    return bodies;
}
