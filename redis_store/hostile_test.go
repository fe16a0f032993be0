package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// The rules of the hostile states: 3 a minute, so that a fresh state
// allows hits 1 to 3 and refuses the 4th under every algorithm (GCRA's
// burst is the whole limit).
var (
	fixed3       = storetest.Checked(ratelab.Rule{Name: "h-fixed", Limit: 3, Window: time.Minute})
	fixed3Ignore = storetest.Checked(ratelab.Rule{Name: "h-fixed-ignore", Limit: 3, Window: time.Minute, Refusals: ratelab.IgnoreRefusals})
	sliding3     = storetest.Checked(ratelab.Rule{Name: "h-sliding", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingCounter})
	log3         = storetest.Checked(ratelab.Rule{Name: "h-log", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog})
	gcra3        = storetest.Checked(ratelab.Rule{Name: "h-gcra", Limit: 3, Window: time.Minute, Algorithm: ratelab.GCRA, Burst: 3})
)

// hitAt is when the hostile states are hit: 10 s into a clock-aligned
// minute.
var hitAt = t0.Add(10 * time.Second)

// years500 is 500 years of 365 days, in seconds: a multiple of every
// window the tests use.
const years500 = int64(500 * 365 * 24 * 3600)

// spoil writes a state to key, with no expiry.
type spoil func(ctx context.Context, c *redis.Client, key string) error

func hash(fields ...any) spoil {
	return func(ctx context.Context, c *redis.Client, key string) error { return c.HSet(ctx, key, fields...).Err() }
}

func str(v string) spoil {
	return func(ctx context.Context, c *redis.Client, key string) error { return c.Set(ctx, key, v, 0).Err() }
}

func list(ctx context.Context, c *redis.Client, key string) error {
	return c.RPush(ctx, key, "count", "1").Err()
}

func set(ctx context.Context, c *redis.Client, key string) error {
	return c.SAdd(ctx, key, "count", "1").Err()
}

// resetAt is the name of a fixed window's reset_at, for the name of its
// count (Store.Key).
func resetAt(key string) string { return key + ":reset_at" }

// pair writes a fixed window's two strings, its count and its reset_at,
// each with an hour's expiry as the store writes them; a nil value is not
// written.
func pair(count, reset any) spoil {
	return func(ctx context.Context, c *redis.Client, key string) error {
		for k, v := range map[string]any{key: count, resetAt(key): reset} {
			if v == nil {
				continue
			}
			if err := c.Set(ctx, k, v, time.Hour).Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// both writes a, then b at the name of the fixed window's reset_at.
func both(a, b spoil) spoil {
	return func(ctx context.Context, c *redis.Client, key string) error {
		if err := a(ctx, c, key); err != nil {
			return err
		}
		return b(ctx, c, resetAt(key))
	}
}

// hostileCase is a state no rule could have written, under rule.
type hostileCase struct {
	name  string
	rule  ratelab.Rule
	spoil spoil
}

// hostileCases are states of every algorithm that cannot be decoded or
// hold values no rule writes, each as Redis would hold it, and keys of
// other types.
func hostileCases() []hostileCase {
	cs := slices.Concat(hostileFixed(), hostileSliding(), hostileLog(), hostileGCRA())
	for _, r := range []ratelab.Rule{fixed3, sliding3, log3, gcra3} {
		wrong := str("5")
		switch r.Normalized().Algorithm {
		case ratelab.SlidingLog:
			wrong = hash("window", 60, "ts", "")
		case ratelab.FixedWindow, ratelab.GCRA: // a hash of the former format
			wrong = hash("count", 1, "reset_at", hitAt.Unix()+30, "window", 60, "tat", hitAt.UnixMilli())
		}
		cs = append(cs, hostileCase{"another type", r, wrong},
			hostileCase{"a list", r, list}, hostileCase{"a set", r, set})
	}
	return cs
}

func hostileFixed() []hostileCase {
	t := hitAt.Unix()
	live := t + 30 // a live window's reset_at
	beyond := t + int64((ratelab.MaxWindow+ratelab.MaxSkew)/time.Second) + 1
	return []hostileCase{
		{"count not a number", fixed3, pair("abc", live)},
		{"count negative", fixed3, pair(-5, live)},
		{"count minus one", fixed3, pair(-1, live)},
		{"count a fraction", fixed3, pair("1.5", live)},
		{"count in exponent notation", fixed3, pair("1e0", live)},
		{"count past int64", fixed3, pair("99999999999999999999", live)},
		{"count missing", fixed3, pair(nil, live)},
		{"count 0 without an expiry", fixed3, both(str("0"), pair(nil, live))},
		{"count a list", fixed3, both(list, str(fmt.Sprint(live)))},
		{"count a hash", fixed3, both(hash("count", 1), str(fmt.Sprint(live)))},
		{"reset_at missing", fixed3, pair(2, nil)},
		{"reset_at a list", fixed3, both(str("2"), list)},
		{"reset_at a set, count not a number", fixed3, both(str("abc"), set)},
		{"both lists", fixed3, both(list, list)},
		{"reset_at not a number", fixed3, pair(1, "abc")},
		{"reset_at 1e400", fixed3, pair(1, "1e400")},
		{"reset_at inf", fixed3, pair(1, "inf")},
		{"reset_at -inf", fixed3, pair(1, "-inf")},
		{"reset_at nan", fixed3, pair(1, "nan")},
		{"reset_at a fraction", fixed3, pair(1, fmt.Sprint(live)+".5")},
		// Decimal integers as tonumber reads them, not as the script writes them.
		{"reset_at with a leading zero", fixed3, pair(1, "0"+fmt.Sprint(live))},
		{"reset_at in hexadecimal", fixed3, pair(1, fmt.Sprintf("0x%x", live))},
		{"reset_at with a leading space", fixed3, pair(1, " "+fmt.Sprint(live))},
		{"reset_at beyond any rule's window", fixed3, pair(1, beyond)},
		{"reset_at beyond any rule's, count negative", fixed3, pair(-1, beyond)},
		{"reset_at 500 years ahead", fixed3, pair(1, t+years500)},
		{"reset_at zero", fixed3, pair(1, 0)},
		{"reset_at negative", fixed3, pair(1, -5)},
		{"expired, count not a number", fixed3, pair("abc", t-10)},
		{"expired, count missing", fixed3, pair(nil, t-10)},
		{"another rule's window, count not a number", fixed3, pair("abc", t+7200)},
		{"ignored refusals, count in exponent notation", fixed3Ignore, pair("1e3", live)},
		{"ignored refusals, count not a number", fixed3Ignore, pair("abc", live)},
		{"ignored refusals, count negative", fixed3Ignore, pair(-5, live)},
		{"ignored refusals, count missing", fixed3Ignore, pair(nil, live)},
	}
}

func hostileSliding() []hostileCase {
	t := hitAt.Unix()
	ws := t - t%60 // the current window's start
	state := func(window, start, count, prev any) spoil {
		return hash("window", window, "window_start", start, "count", count, "prev_count", prev)
	}
	return []hostileCase{
		{"count not a number", sliding3, state(60, ws, "abc", 0)},
		{"count negative", sliding3, state(60, ws, -1, 0)},
		{"count a fraction", sliding3, state(60, ws, "1.5", 0)},
		{"prev_count negative", sliding3, state(60, ws, 0, -9)},
		{"prev_count missing", sliding3, hash("window", 60, "window_start", ws, "count", 1)},
		{"window 1e400", sliding3, state("1e400", ws, 1, 0)},
		{"window nan", sliding3, state("nan", ws, 1, 0)},
		{"window 0", sliding3, state(0, ws, 1, 0)},
		{"window longer than any rule's", sliding3, state(40000000, 0, 1, 0)},
		{"window_start not a multiple", sliding3, state(60, ws+7, 1, 0)},
		{"window_start negative", sliding3, state(60, -60, 1, 0)},
		{"window_start inf", sliding3, state(60, "inf", 1, 0)},
		{"window_start 500 years ahead", sliding3, state(60, ws+years500, 3, 0)},
		{"window_start past MaxSkew", sliding3, state(60, ws+120, 3, 0)},
		{"another window's start 500 years ahead", sliding3, state(3600, t-t%3600+years500, 1, 0)},
	}
}

func hostileLog() []hostileCase {
	ms := hitAt.UnixMilli()
	logOf := func(window string, ts ...string) spoil {
		return str(`{"window":` + window + `,"ts":[` + strings.Join(ts, ",") + `]}`)
	}
	far, skewMs := ms+years500*1000, ratelab.MaxSkew.Milliseconds()
	many := make([]string, ratelab.MaxLogLimit+1)
	for i := range many {
		many[i] = strconv.FormatInt(ms-int64(len(many)-i), 10)
	}
	return []hostileCase{
		{"not JSON", log3, str("garbage")},
		{"out of order", log3, logOf("60", fmt.Sprint(ms-1000), fmt.Sprint(ms-5000))},
		{"instant not a number", log3, logOf("60", `"a"`)},
		{"instant a fraction", log3, logOf("60", fmt.Sprint(ms-1000)+".5")},
		{"instant negative", log3, logOf("60", "-1")},
		{"instant after the year 3000", log3, logOf("60", "32503680000000")},
		{"instant 1e400", log3, logOf("60", "1e400")},
		{"window 1e400", log3, logOf("1e400")},
		{"window a string", log3, logOf(`"60"`)},
		{"window 0", log3, logOf("0")},
		{"ts missing", log3, str(`{"window":60}`)},
		{"window missing", log3, str(`{"ts":[]}`)},
		{"ts an object", log3, str(`{"window":60,"ts":{"a":1}}`)},
		{"an array", log3, str(`[60,[1]]`)},
		{"a number", log3, str(`60`)},
		{"null", log3, str(`null`)},
		{"data after the object", log3, str(`{"window":60,"ts":[]}x`)},
		{"more instants than any limit", log3, logOf("60", many...)},
		{"larger than any state", log3, str(`{"window":60,"ts":[]}` + strings.Repeat(" ", algorithm.MaxStateSize(log3)))},
		{"three instants 500 years ahead", log3, logOf("60", fmt.Sprint(far), fmt.Sprint(far+1), fmt.Sprint(far+2))},
		{"an instant past MaxSkew", log3, logOf("60", fmt.Sprint(ms-5), fmt.Sprint(ms+skewMs+1))},
		{"another window, an instant past MaxSkew", log3, logOf("3600", fmt.Sprint(ms+skewMs+1))},
	}
}

func hostileGCRA() []hostileCase {
	ms := hitAt.UnixMilli()
	state := func(tat, window any) spoil { return str(fmt.Sprintf("%v:%v", tat, window)) }
	return []hostileCase{
		{"tat not a number", gcra3, state("garbage", 60)},
		{"tat 1e400", gcra3, state("1e400", 60)},
		{"tat nan", gcra3, state("nan", 60)},
		{"tat negative", gcra3, state(-5, 60)},
		{"tat a fraction", gcra3, state(fmt.Sprint(ms)+".5", 60)},
		{"tat after any state's", gcra3, state("32566924800000", 60)},
		{"tat missing", gcra3, state("", 60)},
		{"window missing", gcra3, state(ms, "")},
		{"no separator", gcra3, str(fmt.Sprint(ms))},
		{"a third field", gcra3, str(fmt.Sprintf("%d:60:1", ms))},
		{"empty", gcra3, str("")},
		{"window not a number", gcra3, state(ms, "abc")},
		{"window 0", gcra3, state(ms, 0)},
		{"window longer than any rule's", gcra3, state(ms, 40000000)},
		{"tat 500 years ahead", gcra3, state(ms+years500*1000, 60)},
		{"tat 100000 s ahead of an hour's", gcra3, state(ms+100000*1000, 3600)},
		{"tat past three windows and MaxSkew", gcra3, state(ms+(3*60*1000+ratelab.MaxSkew.Milliseconds())+1, 60)},
		// Decimal integers as tonumber reads them, not as the script writes them.
		{"tat with a leading zero", gcra3, state("0"+fmt.Sprint(ms), 60)},
		{"tat in hexadecimal", gcra3, state(fmt.Sprintf("0x%x", ms), 60)},
		{"window with a leading space", gcra3, state(ms, " 60")},
		{"window with a leading zero", gcra3, state(ms, "060")},
	}
}

// A state that cannot be decoded, or holds values no rule writes, is
// replaced by a fresh one, with a warning naming the key and an expiry:
// the hit is decided (no error, even failing closed) as the first hit of a
// fresh state, and the hits after it count as usual.
func TestHostileStateIsReplaced(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	for i, hc := range hostileCases() {
		t.Run(string(hc.rule.Normalized().Algorithm)+"/"+hc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := newStore(t, srv, redisstore.Options{Prefix: fmt.Sprintf("h%d:", i),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			key := s.Key(hc.rule, "k")
			require.NoError(t, hc.spoil(context.Background(), c, key))
			var allowed []bool
			for n, want := range freshDecisions(t, hc.rule, 4) {
				got, err := s.TakeAt(context.Background(), hc.rule, "k", hitAt)
				require.NoError(t, err, "hit %d", n+1)
				assert.Equal(t, want, got, "hit %d: got, want (a fresh state's)", n+1)
				allowed = append(allowed, got.Allowed)
				if n == 0 {
					assertExpires(t, c, hc.rule, key)
				}
			}
			assert.Equal(t, []bool{true, true, true, false}, allowed, "hits 1 to 4")
			assert.Equal(t, 1, strings.Count(logs.String(), "replaced a corrupt state"), "one warning: %s", logs.String())
			assert.Contains(t, logs.String(), key, "the warning names the key")
			assert.Contains(t, logs.String(), "cause=", "the warning says what was wrong")
		})
	}
}

// assertExpires asserts that every key of the state at key (Store.Key)
// under r has an expiry.
func assertExpires(t *testing.T, c *redis.Client, r ratelab.Rule, key string) {
	t.Helper()
	keys := []string{key}
	if r.Normalized().Algorithm == ratelab.FixedWindow {
		keys = append(keys, resetAt(key))
	}
	for _, k := range keys {
		ttl, err := c.PTTL(context.Background(), k).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "the replaced state's expiry, %s", k)
	}
}

// dump is the serialized value of every key of the state at key under r.
func dump(c *redis.Client, r ratelab.Rule, key string) []string {
	out := []string{c.Dump(context.Background(), key).Val()}
	if r.Normalized().Algorithm == ratelab.FixedWindow {
		out = append(out, c.Dump(context.Background(), resetAt(key)).Val())
	}
	return out
}

// freshDecisions are the first n decisions of r at hitAt on a fresh state,
// by package algorithm's step.
func freshDecisions(t *testing.T, r ratelab.Rule, n int) []ratelab.Decision {
	var state []byte
	var out []ratelab.Decision
	for range n {
		res, err := algorithm.Take(nil, state, r.Normalized(), hitAt)
		require.NoError(t, err)
		if res.State != nil {
			state = res.State
		}
		out = append(out, res.Decision)
	}
	return out
}

// legitCase is a state a rule may have written, and the same state as
// package algorithm encodes it.
type legitCase struct {
	name  string
	rule  ratelab.Rule
	spoil spoil
	state string
}

func legitCases() []legitCase {
	t, ms := hitAt.Unix(), hitAt.UnixMilli()
	live, ws, hour := t+30, t-t%60, t-t%3600
	skew := int64(ratelab.MaxSkew / time.Second)
	last := t + int64((ratelab.MaxWindow+ratelab.MaxSkew)/time.Second)
	fixed := func(r ratelab.Rule, count, resetAt any) legitCase {
		return legitCase{"", r, pair(count, resetAt), fmt.Sprintf(`{"count":%v,"reset_at":%v}`, count, resetAt)}
	}
	sliding := func(window, start, count, prev any) legitCase {
		return legitCase{"", sliding3, hash("window", window, "window_start", start, "count", count, "prev_count", prev),
			fmt.Sprintf(`{"window":%v,"window_start":%v,"count":%v,"prev_count":%v}`, window, start, count, prev)}
	}
	log := func(s string) legitCase { return legitCase{"", log3, str(s), s} }
	gcra := func(window, tat any) legitCase {
		return legitCase{"", gcra3, str(fmt.Sprintf("%v:%v", tat, window)), fmt.Sprintf(`{"window":%v,"tat":%v}`, window, tat)}
	}
	named := func(name string, c legitCase) legitCase { c.name = name; return c }
	recent := fmt.Sprintf(`{"window":60,"ts":[%d,%d,%d,%d,%d,%d,%d,%d,%d,%d]}`, ms-10, ms-9, ms-8, ms-7, ms-6, ms-5, ms-4, ms-3, ms-2, ms-1)
	return []legitCase{
		named("fixed, a lowered limit", fixed(fixed3, 10, live)),
		named("fixed, count 0", fixed(fixed3, 0, live)),
		named("fixed, a saturated count", fixed(fixed3, int64(1)<<50, live)),
		named("fixed, the largest count", fixed(fixed3, "9223372036854775807", live)),
		named("fixed, ignored refusals at the limit", fixed(fixed3Ignore, 3, live)),
		named("fixed, ignored refusals past 2^40", fixed(fixed3Ignore, int64(1)<<50, live)),
		named("fixed, another rule's window", fixed(fixed3, 7, t+7200)),
		named("fixed, the longest rule's window", fixed(fixed3, 7, last)),
		named("sliding, a lowered limit", sliding(60, ws, 10, 4)),
		named("sliding, saturated counts", sliding(60, ws, int64(1)<<40, int64(1)<<40)),
		named("sliding, another rule's window", sliding(3600, hour, 1, 0)),
		named("log, a lowered limit", log(recent)),
		named("log, equal instants", log(fmt.Sprintf(`{"window":60,"ts":[%d,%d]}`, ms-5, ms-5))),
		named("log, padded", log(fmt.Sprintf(`{"window":60,"ts":[%d]}   `, ms-5))),
		named("log, empty", log("")),
		named("log, another rule's window", log(fmt.Sprintf(`{"window":3600,"ts":[%d]}`, ms-5))),
		named("gcra, a lowered limit", gcra(60, ms+50000)),
		named("gcra, another rule's window", gcra(3600, ms)),
		named("sliding, a window begun MaxSkew ahead", sliding(60, ws+60, 3, 0)),
		named("sliding, another rule's window begun MaxSkew ahead", sliding(1, t+skew, 1, 0)),
		named("log, an instant MaxSkew ahead", log(fmt.Sprintf(`{"window":60,"ts":[%d,%d]}`, ms-5, ms+skew*1000))),
		named("log, another rule's instant MaxSkew ahead", log(fmt.Sprintf(`{"window":3600,"ts":[%d]}`, ms+skew*1000))),
		named("gcra, three windows and MaxSkew ahead", gcra(60, ms+(3*60+skew)*1000)),
		named("gcra, another rule's, three of its windows and MaxSkew ahead", gcra(3600, ms+(3*3600+skew)*1000)),
	}
}

// A state a rule may have written is not corrupt, however it looks to
// this rule: one filled under a higher limit, one at a count that
// saturated, another rule's window (a conflict, the state untouched). The
// hit is decided as package algorithm's step decides it on the same state,
// and nothing is logged.
func TestLegitimateStateIsKept(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	for i, lc := range legitCases() {
		t.Run(lc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := newStore(t, srv, redisstore.Options{Prefix: fmt.Sprintf("l%d:", i),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			key := s.Key(lc.rule, "k")
			require.NoError(t, lc.spoil(context.Background(), c, key))
			before := dump(c, lc.rule, key)
			want, wantErr := algorithm.Take(nil, []byte(lc.state), lc.rule.Normalized(), hitAt)
			got, err := s.TakeAt(context.Background(), lc.rule, "k", hitAt)
			assert.Empty(t, logs.String(), "nothing logged")
			if wantErr != nil {
				require.ErrorIs(t, err, ratelab.ErrRuleConflict, "got, want the step's %v", wantErr)
				assert.Equal(t, before, dump(c, lc.rule, key), "another rule's state was touched")
				return
			}
			require.NoError(t, want.Replaced, "the step keeps the state")
			require.NoError(t, err)
			assert.Equal(t, want.Decision, got, "got, want (the step's)")
		})
	}
}
