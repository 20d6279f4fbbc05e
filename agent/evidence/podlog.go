package evidence

import (
	"regexp"
	"time"
)

// DefaultPodLogLimit is the number of lines PodLogs returns when
// PodLogQuery.Limit is 0.
const DefaultPodLogLimit = 500

// MaxPodLogLine is the longest pod log line kept; longer lines are cut.
const MaxPodLogLine = 64 << 10

// PodLogCollector applies a PodLogQuery's time window, pattern and limit to
// log lines fed one at a time, keeping only the last Limit matching lines
// (memory stays bounded whatever the log size). The time window applies to
// lines with a timestamp; a line without one (a stack trace, a wrapped
// message) takes the timestamp of the line before it in the same stream.
// Lines before the first timestamp of a stream (a log that prints none, such
// as a shell script's errors) stay usable unless the window provably
// excludes them: they are dropped only when the stream's first timestamp is
// before the window's start. Both the bundle and the live backend use it,
// so they give the same answers.
type PodLogCollector struct {
	since, until time.Time
	re           *regexp.Regexp
	ref          time.Time
	ring         []LogLine
	limit        int
	next         int
	full         bool
	last         time.Time
	res          LogResult
	// pending holds the matching lines of the current stream read before its
	// first timestamp (the last limit of them; pendingN counts them all).
	pending  []LogLine
	pendingN int
	timed    bool // the current stream has shown a timestamp
}

// NewPodLogCollector returns a collector for q; ref resolves the year of
// yearless timestamps. A bad pattern is an invalid-argument *Error of source.
func NewPodLogCollector(source string, q PodLogQuery, ref time.Time) (*PodLogCollector, error) {
	c := &PodLogCollector{since: q.Since, until: q.Until, ref: ref}
	if q.Pattern != "" {
		re, err := regexp.Compile(q.Pattern)
		if err != nil {
			return nil, &Error{Source: source, Code: CodeInvalid, Err: err}
		}
		c.re = re
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPodLogLimit
	}
	c.limit = limit
	c.ring = make([]LogLine, 0, min(limit, 1024))
	return c, nil
}

// StartStream marks the start of a new stream (another container): the
// timestamp carried to lines without one is reset.
func (c *PodLogCollector) StartStream() {
	c.flushPending(true)
	c.last = time.Time{}
	c.timed = false
}

// flushPending keeps or drops the lines read before the stream's first
// timestamp.
func (c *PodLogCollector) flushPending(keep bool) {
	if keep {
		c.res.Matched += c.pendingN - len(c.pending)
		start := 0
		if c.pendingN > len(c.pending) {
			start = c.pendingN % len(c.pending)
		}
		for i := range c.pending {
			c.keep(c.pending[(start+i)%len(c.pending)])
		}
	}
	c.pending, c.pendingN = c.pending[:0], 0
}

// Add considers one line of source.
func (c *PodLogCollector) Add(source, text string) {
	if len(text) > MaxPodLogLine {
		text = text[:MaxPodLogLine]
	}
	c.res.Scanned++
	t := ParseLogTime(text, c.ref)
	eff := t
	if t.IsZero() {
		eff = c.last
	} else {
		c.last = t
		if !c.timed {
			c.timed = true
			c.flushPending(c.since.IsZero() || !t.Before(c.since))
		}
	}
	windowed := !c.since.IsZero() || !c.until.IsZero()
	if windowed && eff.IsZero() {
		// before the stream's first timestamp: decided when it comes
		if c.re != nil && !c.re.MatchString(text) {
			return
		}
		l := LogLine{Source: source, Text: text}
		if len(c.pending) < c.limit {
			c.pending = append(c.pending, l)
		} else {
			c.pending[c.pendingN%c.limit] = l
		}
		c.pendingN++
		return
	}
	if windowed {
		if !c.since.IsZero() && eff.Before(c.since) {
			return
		}
		if !c.until.IsZero() && eff.After(c.until) {
			return
		}
	}
	if c.re != nil && !c.re.MatchString(text) {
		return
	}
	c.keep(LogLine{Time: t, Source: source, Text: text})
}

// keep adds a matching line to the ring of the last limit lines.
func (c *PodLogCollector) keep(l LogLine) {
	c.res.Matched++
	if len(c.ring) < c.limit {
		c.ring = append(c.ring, l)
		return
	}
	c.ring[c.next] = l
	c.next = (c.next + 1) % len(c.ring)
	c.full = true
}

// Result returns the collected lines in input order.
func (c *PodLogCollector) Result() *LogResult {
	c.flushPending(true)
	out := c.res
	out.Lines = make([]LogLine, 0, len(c.ring))
	if c.full {
		out.Lines = append(out.Lines, c.ring[c.next:]...)
		out.Lines = append(out.Lines, c.ring[:c.next]...)
	} else {
		out.Lines = append(out.Lines, c.ring...)
	}
	out.Truncated = out.Matched > len(out.Lines)
	return &out
}
