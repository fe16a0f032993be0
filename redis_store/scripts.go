package redisstore

import "github.com/redis/go-redis/v9"

// The four steps of package algorithm as Redis scripts, one per hit: each
// reads the state, decides, writes the state and its expiry in one step, so
// no other client runs in between and a crash of the client cannot leave a
// state without an expiry. Each takes
//
//	KEYS[1] the state's key
//	ARGV    now (Unix ms), window (s), limit, burst, MaxSkew (s), 1 if refused hits count
//
// and returns {0, allowed, remaining, retry_after_ms, reset_after_ms}, or
// {1, detail} when the state belongs to another rule of the same name
// (detail: the window the state records, or for a fixed window how far
// ahead it ends). Numbers are Lua doubles, exact below 2^53, which the
// bounds of ratelab.Rule keep every value under; the ones written back are
// formatted as integers. The caller's clock decides; TTLs only clean up.
const prelude = `
local tn, call = tonumber, redis.call
local nowms, w, limit, burst, skew = tn(ARGV[1]), tn(ARGV[2]), tn(ARGV[3]), tn(ARGV[4]), tn(ARGV[5])
local countRefused = ARGV[6] == '1'
local t = (nowms - nowms % 1000) / 1000
local function int(x) return string.format('%d', x) end
`

// !+fixedscript

// fixedWindow is the state step of algorithm.Fixed.Take, kept as small as
// it can be, because one hot key goes no faster than Redis runs it: the
// client passes the instants ready-made (ARGV: now, the latest reset_at
// that is still this rule's, a new window's reset_at and its expiry, all
// in seconds, and the limit when refused hits are not to be counted, else
// 0) and decides from the {count, reset_at} it gets back. A hit inside a
// live window is one HGET and one HINCRBY; only a new window writes
// reset_at and the expiry. {-1, reset_at}: another rule's window.
var fixedWindow = redis.NewScript(`
local call = redis.call
local reset = tonumber(call('HGET', KEYS[1], 'reset_at'))
if reset and reset > tonumber(ARGV[1]) then
  if reset > tonumber(ARGV[2]) then return {-1, reset} end
  if ARGV[5] ~= '0' then -- refusals not counted: a hit at the limit changes nothing
    local c = tonumber(call('HGET', KEYS[1], 'count')) or 0
    if c >= tonumber(ARGV[5]) then return {c + 1, reset} end
  end
  local count = call('HINCRBY', KEYS[1], 'count', 1)
  if count < 1 or count > 1099511627776 then -- a hostile count: saturate as Take does
    count = math.min(math.max(count, 1), 1099511627776)
    call('HSET', KEYS[1], 'count', string.format('%d', count))
  end
  return {count, reset}
end
call('HSET', KEYS[1], 'count', 1, 'reset_at', ARGV[3])
call('EXPIRE', KEYS[1], ARGV[4])
return {1, tonumber(ARGV[3])}
`)

// !-fixedscript

// slidingCounter is algorithm.Sliding.Take.
var slidingCounter = redis.NewScript(prelude + `
local st = call('HMGET', KEYS[1], 'window', 'window_start', 'count', 'prev_count')
local sw, ws, c, p = tn(st[1]), tn(st[2]), tn(st[3]), tn(st[4])
if sw == nil or ws == nil or c == nil or p == nil then sw, ws, c, p = 0, 0, 0, 0 end
if sw ~= 0 and sw ~= w then return {1, sw} end
local cur = math.max(t - (t % w), ws)
if ws == cur then
elseif ws == cur - w then p, c = c, 0
else p, c = 0, 0 end
p = math.min(math.max(p, 0), 268435456)
local kept = math.min(math.max(c, 0), 268435456)
c = math.min(math.max(c, 0), 268435455) + 1
local elapsed = math.min(math.max(t - cur, 0), w)
local weighted = math.floor((p * (w - elapsed) + c * w + w - 1) / w)
local stored = c
if weighted > limit and not countRefused then stored = kept end
call('HSET', KEYS[1], 'window', int(w), 'window_start', int(cur), 'count', int(stored), 'prev_count', int(p))
call('EXPIRE', KEYS[1], int(math.max(cur + 2 * w - t, 0) + 1))
local after = math.max(0, (cur + 2 * w) * 1000 - nowms)
if weighted <= limit then return {0, 1, limit - weighted, 0, after} end
local at
if c + 1 <= limit then
  at = math.max(t, cur + math.min(w - math.floor((limit - c - 1) * w / p), w))
elseif limit <= 1 then
  at = cur + 2 * w
else
  at = cur + 2 * w - math.floor((limit - 1) * w / c)
end
return {0, 0, 0, math.max(0, at * 1000 - nowms), after}
`)

// slidingLog is algorithm.Log.Take; the state is the same JSON the file
// store writes, in a string key.
var slidingLog = redis.NewScript(prelude + `
local raw = call('GET', KEYS[1])
local sw, ts = 0, {}
if raw then
  local o = cjson.decode(raw)
  sw, ts = tn(o.window), o.ts
end
if sw ~= 0 and sw ~= w then return {1, sw} end
local n = #ts
local at = nowms
if n > 0 and ts[n] > at then at = ts[n] end
local i = 1
while i <= n and ts[i] < at - w * 1000 do i = i + 1 end
local keep = n - i + 1
if keep > limit then i, keep = i + keep - limit, limit end
local out = {}
if keep >= limit then
  if not countRefused then
    return {0, 0, 0, math.max(0, ts[i] + w * 1000 + 1 - nowms), math.max(0, ts[n] + w * 1000 + 1 - nowms)}
  end
  -- the refused hit is recorded in place of the oldest
  for j = i + keep - limit + 1, n do out[#out + 1] = int(ts[j]) end
  out[#out + 1] = int(at)
  call('SET', KEYS[1], '{"window":' .. int(w) .. ',"ts":[' .. table.concat(out, ',') .. ']}',
    'PX', int(at + w * 1000 + 1 - nowms + skew * 1000))
  return {0, 0, 0, math.max(0, tn(out[1]) + w * 1000 + 1 - nowms), math.max(0, at + w * 1000 + 1 - nowms)}
end
for j = i, n do out[#out + 1] = int(ts[j]) end
out[#out + 1] = int(at)
call('SET', KEYS[1], '{"window":' .. int(w) .. ',"ts":[' .. table.concat(out, ',') .. ']}',
  'PX', int(at + w * 1000 + 1 - nowms + skew * 1000))
return {0, 1, limit - #out, 0, math.max(0, at + w * 1000 + 1 - nowms)}
`)

// gcra is algorithm.GCRAState.Take.
var gcra = redis.NewScript(prelude + `
local st = call('HMGET', KEYS[1], 'window', 'tat')
local sw, tat = tn(st[1]) or 0, tn(st[2]) or 0
if sw ~= 0 and sw ~= w then return {1, sw} end
local interval = math.floor((w * 1000 + limit - 1) / limit)
tat = math.max(tat, nowms)
local allowat = tat + interval - burst * interval
if nowms < allowat then
  if not countRefused then return {0, 0, 0, allowat - nowms, math.max(0, tat - nowms)} end
  tat = math.min(tat + interval, nowms + burst * interval + w * 1000)
  call('HSET', KEYS[1], 'window', int(w), 'tat', int(tat))
  call('PEXPIRE', KEYS[1], int(tat - nowms + skew * 1000))
  return {0, 0, 0, math.max(0, tat + interval - burst * interval - nowms), math.max(0, tat - nowms)}
end
call('HSET', KEYS[1], 'window', int(w), 'tat', int(tat + interval))
call('PEXPIRE', KEYS[1], int(tat + interval - nowms + skew * 1000))
return {0, 1, math.floor((nowms - allowat) / interval), 0, tat + interval - nowms}
`)
