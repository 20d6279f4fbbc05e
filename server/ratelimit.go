package server

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rootcause/rootcause/db"
)

// rateClass is the rate-limit class of a route.
type rateClass int

// Rate classes. rateNone is for public routes only; rateAuthFailure counts
// failed authentications per client address.
const (
	rateNone rateClass = iota
	rateRead
	rateWrite
	rateRun
	rateAuthFailure
)

func (c rateClass) String() string {
	switch c {
	case rateRead:
		return "read"
	case rateWrite:
		return "write"
	case rateRun:
		return "run"
	case rateAuthFailure:
		return "auth_failure"
	}
	return "none"
}

// maxLimiterEntries bounds the memory of a limiter: beyond it, idle buckets
// are dropped first, then arbitrary ones.
const maxLimiterEntries = 100_000

// sweepEvery is how often idle buckets are dropped.
const sweepEvery = time.Minute

// rateLimiter is a token bucket per (key, class): capacity = the per-minute
// limit, refilled continuously at limit/minute. A bucket that has refilled
// to capacity is indistinguishable from a new one, so dropping it is free;
// that keeps memory bounded by the number of recently active keys.
type rateLimiter struct {
	now    func() time.Time
	limits map[rateClass]int // per minute; negative: unlimited
	max    int
	// limitValue is each class's limit as sent in X-RateLimit-Limit
	// (fixedValue).
	limitValue [rateAuthFailure + 1][]string
	// resetText is the last X-RateLimit-Reset value formatted: requests
	// within the same second share it.
	resetText atomic.Pointer[unixText]

	mu        sync.Mutex
	buckets   map[bucketKey]*bucket
	lastSweep time.Time
}

type bucketKey struct {
	key   string
	class rateClass
}

type bucket struct {
	tokens float64
	last   time.Time
}

// unixText is a Unix time and its decimal text as a header value
// (fixedValue).
type unixText struct {
	unix  int64
	value []string
}

func newRateLimiter(now func() time.Time, max int, limits map[rateClass]int) *rateLimiter {
	l := &rateLimiter{now: now, limits: limits, max: max, buckets: make(map[bucketKey]*bucket)}
	for c, n := range limits {
		if c >= 0 && int(c) < len(l.limitValue) {
			l.limitValue[c] = fixedValue(strconv.Itoa(n))
		}
	}
	return l
}

// resetHeader returns the decimal text of unix as a header value,
// formatted once per second.
func (l *rateLimiter) resetHeader(unix int64) []string {
	if t := l.resetText.Load(); t != nil && t.unix == unix {
		return t.value
	}
	t := &unixText{unix: unix, value: fixedValue(strconv.FormatInt(unix, 10))}
	l.resetText.Store(t)
	return t.value
}

// state is a bucket's view after refilling to now.
type rateState struct {
	limit     int
	remaining int
	reset     time.Time     // when the bucket is full again
	retry     time.Duration // until the next token, when empty
	allowed   bool
}

// refill returns the bucket of k refilled to now, creating a full one.
// The caller holds mu.
func (l *rateLimiter) refill(k bucketKey, limit int, now time.Time) *bucket {
	b, ok := l.buckets[k]
	if !ok {
		l.maybeSweep(now)
		b = &bucket{tokens: float64(limit), last: now}
		l.buckets[k] = b
		return b
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = math.Min(float64(limit), b.tokens+el.Minutes()*float64(limit))
		b.last = now
	}
	return b
}

// use refills k's bucket and, when consume is true and a token is there,
// takes one. It reports the resulting state.
func (l *rateLimiter) use(key string, class rateClass, consume bool) (rateState, bool) {
	limit, ok := l.limits[class]
	if !ok || limit < 0 {
		return rateState{}, false
	}
	now := l.now()
	l.mu.Lock()
	b := l.refill(bucketKey{key, class}, limit, now)
	st := rateState{limit: limit, allowed: b.tokens >= 1}
	if consume && st.allowed {
		b.tokens--
	}
	perToken := time.Minute / time.Duration(max(limit, 1))
	if !st.allowed {
		st.retry = time.Duration((1 - b.tokens) * float64(perToken))
	}
	st.remaining = int(math.Floor(b.tokens))
	st.reset = now.Add(time.Duration((float64(limit) - b.tokens) * float64(perToken)))
	l.mu.Unlock()
	return st, true
}

// charge takes one token for a request of id in class, sets the
// X-RateLimit-* headers and returns 429 rate_limited when none is left.
func (l *rateLimiter) charge(w http.ResponseWriter, id string, class rateClass) error {
	st, limited := l.use(id, class, true)
	if !limited {
		return nil
	}
	// Keys are written in canonical form directly: every authenticated
	// request sets these three, and Header.Set would canonicalise each.
	limit := l.limitValue[class]
	if limit == nil {
		limit = fixedValue(strconv.Itoa(st.limit))
	}
	setFixedHeader(w, "X-Ratelimit-Limit", limit)
	setIntHeader(w, "X-Ratelimit-Remaining", st.remaining)
	setFixedHeader(w, "X-Ratelimit-Reset", l.resetHeader(ceilUnix(st.reset)))
	if !st.allowed {
		return WithRetryAfter(db.Errorf(db.ERATELIMITED, "rate limit exceeded: %d %s requests per minute", st.limit, class), st.retry)
	}
	return nil
}

// fail charges one failure to key in class. When the key had no token
// left, the failure is answered 429 rate_limited with Retry-After instead
// of err; otherwise err is returned as is. Only failures reach it: a
// request whose credential is valid is never charged nor refused.
func (l *rateLimiter) fail(key string, class rateClass, err error) error {
	st, limited := l.use(key, class, true)
	if limited && !st.allowed {
		return WithRetryAfter(db.Errorf(db.ERATELIMITED, "too many failed authentication attempts from this address"), st.retry)
	}
	return err
}

// maybeSweep drops idle buckets once per sweepEvery, and makes room when the
// map is full. The caller holds mu.
func (l *rateLimiter) maybeSweep(now time.Time) {
	full := len(l.buckets) >= l.max
	if !full && now.Sub(l.lastSweep) < sweepEvery {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		limit := l.limits[k.class]
		if b.tokens+now.Sub(b.last).Minutes()*float64(limit) >= float64(limit) {
			delete(l.buckets, k)
		}
	}
	// Still full: every bucket is in use. Drop arbitrary ones (map order is
	// random) rather than grow without bound; those keys start afresh. Free
	// an eighth of the map at once, so the scan above runs once per max/8
	// new keys rather than on every one (a flood of distinct keys would
	// otherwise cost a full scan per request under the lock).
	target := l.max - max(l.max/8, 1)
	for k := range l.buckets {
		if len(l.buckets) <= target {
			break
		}
		delete(l.buckets, k)
	}
}

// len returns the number of tracked buckets.
func (l *rateLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func ceilUnix(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}
