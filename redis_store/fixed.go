package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// !+fixedscript

// fixedWindow is the state step of algorithm.Fixed.Take, kept as small as
// it can be, because one hot key goes no faster than Redis runs it. The
// state is two strings in one hash slot: KEYS[1] the count, KEYS[2] the
// window's end (reset_at, Unix seconds), both with an expiry that only
// cleans up. The client passes now and the window (ARGV, Unix seconds)
// and, only when refused hits are not counted, the limit; it decides from
// the {count, reset_at} it gets back. A hit inside a live window is one
// GET and one INCR, which refuses a count that is not a decimal integer;
// anything else — a new window, a count that saturates or that INCR made
// from nothing, a conflict, a state no rule wrote — takes the slower path
// after it. {-1, reset_at}: another rule's window; {1, reset_at, cause}:
// the state was replaced by a fresh window. An INCR the server refused
// for any reason but the count's own (out of memory, a read-only
// replica) is the script's error: the slower path took the live window's
// count for this hit's, and a full Redis answered every hit of a client
// seen before "allowed, 2 left" without counting it (the attacker's
// finding at 657a847).
var fixedWindow = newScript(`
local rpcall, limit = redis.pcall, ARGV[3]
local t = ARGV[1] + 0 -- a string to a number, as tonumber but without its call
local live = t + ARGV[2] + ` + maxSkewSeconds + ` -- the latest reset_at of this rule's own window
local rs = rpcall('GET', KEYS[2])
local r, c = tonumber(rs), nil
if r and r > t and r <= live and rs:find('^[1-9]%d*$') then
  if limit then -- refusals not counted: a hit at the limit changes nothing
    local cs = rpcall('GET', KEYS[1])
    local n = tonumber(cs)
    if n and n >= tonumber(limit) and #cs < 19 and cs:find('^[1-9]%d*$') then return {math.min(n, 1099511627776) + 1, r} end
  end
  c = rpcall('INCR', KEYS[1])
  if type(c) == 'number' and c > 1 and c <= 1099511627776 then return {c, r} end
  if type(c) == 'table' and not (c.err:find('^WRONGTYPE') or c.err:find('^ERR value is not an integer') or c.err:find('^ERR increment')) then
    return c -- not counted: a server that takes no write (OOM, READONLY) errs, as redis.call would
  end
end
` + fixedSlowLua)

// !-fixedscript

// fixedSlowLua is the fixed-window script's slower path: rs is the GET of
// reset_at, r its number, c INCR's reply if the hit was counted in a
// window that looked live.
var fixedSlowLua = natLua + `
local call, cause, key, rkey = redis.call, nil, KEYS[1], KEYS[2]
local cs = rpcall('GET', key)
if type(rs) == 'table' or type(cs) == 'table' then cause = wrongType
elseif rs or cs then
  r = nat(rs)
  local n = nat(cs)
  if not (rs and cs) or c == 1 and call('PTTL', key) < 0 then cause = missing -- INCR made the count from nothing
  elseif not r then cause = notNat(rs)
  elseif not n then cause = notNat(cs)
  elseif r == 0 or type(c) == 'number' and c < 1 then cause = outOfRange -- INCR counted from below 0
  elseif r > t + ` + maxWindowSeconds + ` + ` + maxSkewSeconds + ` then cause = tooFar -- later than any rule writes
  elseif r > live then return {-1, r}
  elseif r > t then -- a live window: counted from 0, or past 2^40
    if n > 1099511627776 then call('SET', key, '1099511627776', 'KEEPTTL') end
    return {math.min(n, 1099511627776), r}
  end
end
local w = tonumber(ARGV[2])
call('SET', key, 1, 'EX', w + ` + maxSkewSeconds + ` + 1)
call('SET', rkey, string.format('%d', t + w), 'EX', w + ` + maxSkewSeconds + ` + 1)
return {1, t + w, cause}
`

// fixedResetSuffix ends the name of a fixed window's second key, its
// reset_at, after the name of its count.
const fixedResetSuffix = ":reset_at"

// takeFixed runs the fixed-window script on the count at rkey and its
// reset_at at rkey+fixedResetSuffix (both), whose reply is {count,
// reset_at}, {count, reset_at, cause} for a replaced state, or {-1,
// reset_at} for another rule's window.
func (s *Store) takeFixed(ctx context.Context, both string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	rkey := both[:len(both)-len(fixedResetSuffix)]
	vals, err := s.run(ctx, fixedWindow, []string{rkey, both}, fixedArgs(r, now)...)
	switch {
	case err != nil && !isUnconfirmed(err):
		return ratelab.Decision{}, err
	case len(vals) == 3 && vals[0] >= 1:
		s.replaced(rkey, vals[2])
	case len(vals) != 2:
		return ratelab.Decision{}, fmt.Errorf("redisstore: script returned %v", vals)
	case vals[0] == -1:
		return ratelab.Decision{}, algorithm.FixedConflict(r, vals[1]-now.Unix())
	}
	return algorithm.FixedDecision(r, vals[0], vals[1], now), err
}

// fixedArgs are the fixed-window script's arguments for a hit of r at
// now: now and the window, in Unix seconds, and, only when refused hits
// are not counted, the count at which a hit is refused uncounted. Two
// numbers as a rule, because each argument costs Redis time on every
// hit, and the script derives the rest.
func fixedArgs(r ratelab.Rule, now time.Time) []any {
	if r.Refusals == ratelab.IgnoreRefusals {
		return []any{now.Unix(), int64(r.Window / time.Second), r.Limit}
	}
	return []any{now.Unix(), int64(r.Window / time.Second)}
}
