package evidence

import (
	"regexp"
	"strings"
	"time"
)

// DefaultPodLogLimit is the number of lines PodLogs returns when
// PodLogQuery.Limit is 0.
const DefaultPodLogLimit = 500

// MaxPodLogLine is the longest pod log line kept; longer lines are cut.
const MaxPodLogLine = 64 << 10

// logfmtTimeKeys are the keys a logfmt line may start with for its time.
var logfmtTimeKeys = []string{"time=", "ts=", "timestamp=", "t="}

// jsonTimeKeys are the fields of a JSON log line that hold its time.
var jsonTimeKeys = []string{`"ts":"`, `"time":"`, `"timestamp":"`, `"@timestamp":"`, `"ts": "`, `"time": "`, `"timestamp": "`, `"@timestamp": "`}

// ParseLogTime returns the timestamp a log line starts with, best effort, or
// the zero time. Recognised: RFC 3339 (with or without fraction and zone,
// "T" or a space between date and time, optionally in square brackets; a
// missing zone means UTC), klog headers ("I0314 10:02:03.123456", the year
// taken from ref) and syslog ("Mar 14 10:02:03", the year taken from ref).
// ref also resolves the year turn: a yearless time more than a day after ref
// is placed in the previous year. A logfmt time key leading the line
// (time=, ts=, timestamp=, t=) is skipped, and JSON lines are read for
// their "ts", "time", "timestamp" or "@timestamp" field, a string or a
// number since the Unix epoch (pino's milliseconds, zap's seconds).
func ParseLogTime(line string, ref time.Time) time.Time {
	if len(line) < 14 {
		return time.Time{}
	}
	// JSON lines carry their time in a field.
	if line[0] == '{' {
		if t, ok := jsonEpochTime(line); ok {
			return t
		}
		for _, key := range jsonTimeKeys {
			if i := strings.Index(line, key); i >= 0 {
				line = line[i+len(key):]
				break
			}
		}
		if len(line) < 14 || line[0] == '{' {
			return time.Time{}
		}
	}
	// logfmt lines lead with their time key (time=..., ts=...).
	for _, key := range logfmtTimeKeys {
		if strings.HasPrefix(line, key) {
			line = strings.TrimPrefix(line[len(key):], `"`)
			break
		}
	}
	if line[0] == '[' {
		line = line[1:]
	}
	if len(line) < 14 {
		return time.Time{}
	}
	c := line[0]
	switch {
	case c >= '0' && c <= '9' && len(line) >= 19 && line[4] == '-' && line[7] == '-':
		return parseISOPrefix(line)
	case strings.IndexByte("IWEF", c) >= 0 && len(line) >= 14 && isDigits(line[1:5]) && line[5] == ' ':
		// klog: Lmmdd hh:mm:ss.uuuuuu
		end := 6
		for end < len(line) && end < 21 && (line[end] == ':' || line[end] == '.' || (line[end] >= '0' && line[end] <= '9')) {
			end++
		}
		t, err := time.Parse("0102 15:04:05.999999999", line[1:end])
		if err != nil {
			return time.Time{}
		}
		return withYear(t, ref)
	case c >= 'A' && c <= 'S' && len(line) >= 15 && line[3] == ' ' && line[9] == ':':
		t, err := time.Parse(time.Stamp, line[:15])
		if err != nil {
			return time.Time{}
		}
		return withYear(t, ref)
	}
	return time.Time{}
}

// jsonEpochKeys are the fields of a JSON log line that may hold its time
// as a number since the Unix epoch: pino's "time" (milliseconds), zap's
// and many others' "ts" (seconds with a fraction).
var jsonEpochKeys = []string{`"time":`, `"ts":`, `"timestamp":`}

// jsonEpochTime reads a JSON line's time given as a number since the Unix
// epoch, in seconds (10 digits, maybe a fraction), milliseconds (13),
// microseconds (16) or nanoseconds (19), between 2000 and 2100.
func jsonEpochTime(line string) (time.Time, bool) {
	for _, key := range jsonEpochKeys {
		i := strings.Index(line, key)
		if i < 0 {
			continue
		}
		rest := strings.TrimLeft(line[i+len(key):], " ")
		n := 0
		for n < len(rest) && n < 20 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		digits := rest[:n]
		frac := ""
		if n == 10 && n < len(rest) && rest[n] == '.' {
			m := n + 1
			for m < len(rest) && m < n+10 && rest[m] >= '0' && rest[m] <= '9' {
				m++
			}
			frac = rest[n+1 : m]
			n = m
		}
		if n == 0 {
			continue // a string, read as one
		}
		if n < len(rest) && rest[n] != ',' && rest[n] != '}' && rest[n] != ' ' {
			return time.Time{}, false
		}
		var v int64
		for _, c := range digits {
			v = v*10 + int64(c-'0')
		}
		var t time.Time
		switch len(digits) {
		case 10:
			ns := int64(0)
			if frac != "" {
				f := (frac + "000000000")[:9]
				for _, c := range f {
					ns = ns*10 + int64(c-'0')
				}
			}
			t = time.Unix(v, ns)
		case 13:
			t = time.UnixMilli(v)
		case 16:
			t = time.UnixMicro(v)
		case 19:
			t = time.Unix(0, v)
		default:
			return time.Time{}, false
		}
		if t.Year() < 2000 || t.Year() > 2100 {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	return time.Time{}, false
}

func parseISOPrefix(line string) time.Time {
	end := 19
	for end < len(line) && end < 40 {
		ch := line[end]
		if ch == ' ' || ch == ']' || ch == '\t' || ch == ',' && end > 19 && !isDigitAt(line, end+1) {
			break
		}
		end++
	}
	s := line[:end]
	if s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	s = strings.Replace(s, ",", ".", 1) // log4j style 10:02:03,123
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t.UTC()
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s[:19]); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

func isDigitAt(s string, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func withYear(t, ref time.Time) time.Time {
	if ref.IsZero() {
		ref = time.Now()
	}
	ref = ref.UTC()
	t = time.Date(ref.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	if t.After(ref.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t
}

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
