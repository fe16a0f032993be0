package redisstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// The four steps of package algorithm as Redis scripts, one per hit: each
// reads the state, decides, writes the state and its expiry in one step, so
// no other client runs in between and a crash of the client cannot leave a
// state without an expiry. The sliding counter's and log's take
//
//	KEYS[1] the state's key
//	ARGV    now (Unix ms), window (s), limit, burst, 1 if refused hits count
//
// (GCRA's and the fixed window's say what they take instead) and return
// {0, allowed, remaining, retry_after_ms, reset_after_ms}, or
// {1, detail} when the state belongs to another rule of the same name
// (detail: the window the state records, or for a fixed window how far
// ahead it ends). Numbers are Lua doubles, exact below 2^53, which the
// bounds of ratelab.Rule keep every value under; the ones written back are
// formatted as integers. The caller's clock decides; TTLs only clean up.
//
// A state no rule could have written — a key of another type, a field
// missing or not a decimal integer, a value out of the range its Decode
// function in package algorithm accepts, an instant further ahead of the
// hit than any rule writes (package algorithm's bounds, MaxSkew included),
// a log that is not such JSON — is
// deleted and the hit taken on a fresh state, and the reply gains one
// element, the cause (see causes): never a script error, which would fail
// every hit of the key until it expired, and it might never expire.
var prelude = locals + checks

// locals are what every state script reads first: its arguments and
// bounds, cheap to set up on every hit.
var locals = `
local tn, call, rpcall = tonumber, redis.call, redis.pcall
local nowms, w, limit, burst, skew = tn(ARGV[1]), tn(ARGV[2]), tn(ARGV[3]), tn(ARGV[4]), ` + maxSkewSeconds + `
local countRefused = ARGV[5] == '1'
local t = (nowms - nowms % 1000) / 1000
local function int(x) return string.format('%d', x) end
local maxWindow, maxUnix, maxStateUnix = ` + maxWindowSeconds + `, ` + maxUnix + `, ` + maxStateUnix + `
local cause
`

// checks define the functions that read a state with every check and
// replace one no rule wrote. Lua creates a function anew each time its
// definition runs, which costs Redis time on every hit: a script whose
// common case needs none of them can run them only when it does not
// hold (see gcra).
var checks = `
-- corrupt deletes the state, for the reason code, and returns nil: the state is then absent.
local function corrupt(code) cause = code; call('DEL', KEYS[1]) end
` + natLua + `
-- readHash returns the fields of the state's hash as numbers, or nil when
-- the state is absent or corrupt (then deleted).
local function readHash(...)
  local st, n, present, v = rpcall('HMGET', KEYS[1], ...), select('#', ...), 0, {}
  if st.err then return corrupt(wrongType) end
  for i = 1, n do
    if st[i] then present = present + 1 end
    v[i] = nat(st[i])
  end
  if present == 0 then return nil end
  if present < n then return corrupt(missing) end
  for i = 1, n do
    if not v[i] then return corrupt(notNat(st[i])) end
  end
  return v
end
local function validWindow(x) return x >= 1 and x <= maxWindow end
`

// stateScript is a script of the prelude, defs and body, the body being a
// function's: its reply gains the cause when the state was replaced.
func stateScript(defs, body string) *script { return stepScript(prelude+defs, body) }

// stepScript is a script of head and body, the body being a function's:
// its reply gains the cause when the state was replaced.
func stepScript(head, body string) *script {
	return newScript(head + "local function step()\n" + body + `
end
local r = step()
if cause then r[#r + 1] = cause end
return r
`)
}

// natLua names the causes (causesLua) and defines nat(s): s as a number
// if it is a non-negative decimal integer as Redis writes one (no sign, no
// leading zero, within int64), else nil; and notNat(s), the cause of a
// string nat refuses.
var natLua = causesLua + `
local function nat(s)
  if type(s) ~= 'string' or not (s == '0' or s:find('^[1-9]%d*$')) or #s > 19 or #s == 19 and s > '9223372036854775807' then return nil end
  return tonumber(s)
end
local function notNat(s)
  if s:find('^%-[1-9]%d*$') then return outOfRange end
  return notInteger
end
`

// The causes a script replaces a state for, by the code it returns.
const (
	causeWrongType = iota + 1
	causeMissing
	causeNotInteger
	causeRange
	causeTooFar
	causeNotJSON
	causeOrder
	causeTooLarge
)

// causes say, by code, what was wrong with a state a script replaced.
var causes = map[int64]string{
	causeWrongType:  "the key holds another type than the state's",
	causeMissing:    "the state lacks a field or one of its keys (a count without an expiry: INCR made it from nothing)",
	causeNotInteger: "a field is not a decimal integer",
	causeRange:      "a value is out of range (a negative count, a window no rule has, an instant out of bounds)",
	causeTooFar:     "the state records an instant further ahead of the hit than any rule writes, MaxSkew included",
	causeNotJSON:    "the state is not a JSON object of a window and its instants",
	causeOrder:      "the instants are out of order",
	causeTooLarge:   "the state is larger than any rule's, or holds more instants than any limit",
}

// causesLua names the codes of causes in a script.
var causesLua = fmt.Sprintf(`
local wrongType, missing, notInteger, outOfRange, tooFar, notJSON, outOfOrder, tooLarge = %d, %d, %d, %d, %d, %d, %d, %d
`, causeWrongType, causeMissing, causeNotInteger, causeRange, causeTooFar, causeNotJSON, causeOrder, causeTooLarge)

// The bounds of package algorithm's Decode functions: the longest window
// and MaxSkew (seconds), the end of the instants a hit may carry (the
// year 3000, in Unix seconds; a state's instants reach up to two windows
// past it), the most instants a log holds and the largest encoding of one
// (algorithm.MaxStateSize).
var (
	maxWindowSeconds = strconv.FormatInt(int64(ratelab.MaxWindow/time.Second), 10)
	maxSkewSeconds   = strconv.FormatInt(int64(ratelab.MaxSkew/time.Second), 10)
	maxSkewMillis    = strconv.FormatInt(ratelab.MaxSkew.Milliseconds(), 10)
	maxLogSize       = strconv.Itoa(algorithm.MaxStateSize(ratelab.Rule{Algorithm: ratelab.SlidingLog}))
	maxUnix          = "32503680000" // 3000-01-01T00:00:00Z
	maxStateUnix     = "32566924800" // maxUnix + 2 × MaxWindow
	maxLogLimit      = strconv.Itoa(ratelab.MaxLogLimit)
)

// slidingCounter is algorithm.Sliding.Take.
var slidingCounter = stateScript("", `
local sw, ws, c, p = 0, 0, 0, 0
local v = readHash('window', 'window_start', 'count', 'prev_count')
if v and not (validWindow(v[1]) and v[2] < maxUnix and v[2] % v[1] == 0) then v = corrupt(outOfRange) end
if v and v[2] - t > skew then v = corrupt(tooFar) end
if v then sw, ws, c, p = v[1], v[2], v[3], v[4] end
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
var slidingLog = stateScript(readLogLua, `
local sw, ts = readLog()
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

// readLogLua defines readLog(): the window and instants of the state, as
// algorithm.DecodeLog accepts them (JSON numbers judged by value) and
// algorithm.Take keeps them (none more than MaxSkew after now), or 0 and
// none when the state is absent or corrupt (then deleted).
var readLogLua = `
local function readLog()
  local raw = rpcall('GET', KEYS[1])
  if type(raw) == 'table' then return 0, {}, corrupt(wrongType) end
  if not raw or raw == '' then return 0, {} end
  if #raw > ` + maxLogSize + ` then return 0, {}, corrupt(tooLarge) end
  local ok, o = pcall(cjson.decode, raw)
  if not ok or type(o) ~= 'table' or type(o.window) ~= 'number' or type(o.ts) ~= 'table' then return 0, {}, corrupt(notJSON) end
  local ts, n = o.ts, 0
  for _ in pairs(ts) do n = n + 1 end
  if n ~= #ts then return 0, {}, corrupt(notJSON) end
  if n > ` + maxLogLimit + ` then return 0, {}, corrupt(tooLarge) end
  if o.window % 1 ~= 0 or not validWindow(o.window) then return 0, {}, corrupt(outOfRange) end
  for i = 1, n do
    local x = ts[i]
    if type(x) ~= 'number' or x % 1 ~= 0 then return 0, {}, corrupt(notInteger) end
    if not (x >= 0 and x < maxUnix * 1000) then return 0, {}, corrupt(outOfRange) end
    if i > 1 and x < ts[i - 1] then return 0, {}, corrupt(outOfOrder) end
  end
  if n > 0 and ts[n] - nowms > skew * 1000 then return 0, {}, corrupt(tooFar) end
  return o.window, ts
end
`

// gcra is algorithm.GCRAState.Take, on a state of one string,
// "<tat>:<window>" (Unix ms, seconds), kept as small as it can be: the
// client passes (ARGV) now (Unix ms), the window, the emission interval
// and the burst's offset (burst × interval, ms) it derives from the rule,
// and 1 if refused hits count. A hit on a state this rule wrote — both
// numbers decimal integers as the script writes them, the window this
// rule's, tat in range — is one GET and one SET; any other state is read
// again with every check, and replaced if no rule could have written it.
var gcra = stepScript(`
local rpcall, tn = redis.pcall, tonumber
local nowms, interval, burstOff = tn(ARGV[1]), tn(ARGV[3]), tn(ARGV[4])
local w, cause = ARGV[2], nil
local st, a, sw = rpcall('GET', KEYS[1]), nil, nil
if type(st) == 'string' then a, sw = st:match('^([1-9]%d*):([1-9]%d*)$') end
local tat = tn(a)
if st and not (sw == w and tat - nowms <= w * 3000 + `+maxSkewMillis+` and tat < `+maxStateUnix+` * 1000) then
`+gcraSlowLua+`
end
`, `
tat = math.max(tat or 0, nowms)
local allowat = tat + interval - burstOff
if nowms < allowat then
  if ARGV[5] ~= '1' then return {0, 0, 0, allowat - nowms, tat - nowms} end
  tat = math.min(tat + interval, nowms + burstOff + w * 1000)
  redis.call('SET', KEYS[1], tat .. ':' .. w, 'PX', tat - nowms + `+maxSkewMillis+`)
  return {0, 0, 0, math.max(0, tat + interval - burstOff - nowms), tat - nowms}
end
redis.call('SET', KEYS[1], tat + interval .. ':' .. w, 'PX', tat + interval - nowms + `+maxSkewMillis+`)
return {0, 1, math.floor((nowms - allowat) / interval), 0, tat + interval - nowms}
`)

// gcraSlowLua reads the GCRA state st again with every check: it returns
// {1, window} for another rule's window, sets tat to a state this rule
// wrote, or replaces (deletes) a state no rule wrote, setting cause.
var gcraSlowLua = natLua + `
  local b
  if type(st) == 'string' then a, b = st:match('^([^:]*):([^:]*)$') end
  local t, x = nat(a), nat(b)
  if type(st) ~= 'string' then cause = wrongType
  elseif not a then cause = missing
  elseif not t then cause = notNat(a)
  elseif not x then cause = notNat(b)
  elseif x < 1 or x > ` + maxWindowSeconds + ` or t >= ` + maxStateUnix + ` * 1000 then cause = outOfRange
  elseif t - nowms > (3 * x + ` + maxSkewSeconds + `) * 1000 then cause = tooFar
  elseif b ~= w then return {1, x}
  end
  if cause then redis.call('DEL', KEYS[1]); tat = nil else tat = t end
`

// stepArgs are the arguments of r's script but the fixed window's for a
// hit at now: now (Unix ms), the window (s), then for GCRA the emission
// interval and the burst's offset (ms), for the others the limit and the
// burst, and 1 if refused hits count.
func stepArgs(r ratelab.Rule, now time.Time) []any {
	countRefused := 0
	if r.Refusals == ratelab.CountRefusals {
		countRefused = 1
	}
	w := int64(r.Window / time.Second)
	if r.Algorithm == ratelab.GCRA {
		interval := (w*1000 + r.Limit - 1) / r.Limit
		return []any{now.UnixMilli(), w, interval, r.Burst * interval, countRefused}
	}
	return []any{now.UnixMilli(), w, r.Limit, r.Burst, countRefused}
}
