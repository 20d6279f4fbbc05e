package evidence

import "time"

// The one reader of the time a log line carries: pod logs (PodLogCollector),
// the bundle's and the host's log files (bundle.ScanLog) and everything
// that reads their lines take a line's time from here, so a line has the
// same time wherever it is read.

// logText is a log line as a string or as the bytes a scanner read: the
// common form is read from either without allocating.
type logText interface{ ~string | ~[]byte }

// logfmtTimeKeys are the keys a logfmt line may start with for its time.
var logfmtTimeKeys = []string{"time=", "ts=", "timestamp=", "t="}

// jsonTimeKeys are the fields of a JSON log line that hold its time
// (MongoDB 4.4+ writes it as Extended JSON: {"t":{"$date":"..."}};
// Cloudflare's Logpush writes a request's EdgeStartTimestamp, a firewall
// event's Datetime).
var jsonTimeKeys = []string{`"ts":"`, `"time":"`, `"timestamp":"`, `"@timestamp":"`, `"ts": "`, `"time": "`, `"timestamp": "`, `"@timestamp": "`, `{"t":{"$date":"`, `"EdgeStartTimestamp":"`, `"Datetime":"`}

// jsonEpochKeys are the fields of a JSON log line that may hold its time
// as a number since the Unix epoch: pino's "time" (milliseconds), zap's
// and many others' "ts" (seconds with a fraction).
// Cloudflare's Logpush fields are Unix seconds or nanoseconds when its
// timestamp format is unix or unixnano.
var jsonEpochKeys = []string{`"time":`, `"ts":`, `"timestamp":`, `"EdgeStartTimestamp":`, `"Datetime":`}

// ParseLogTime returns the time a log line carries, or the zero time
// (LineTime for a line held as a string).
func ParseLogTime(line string, ref time.Time) time.Time {
	t, _ := lineTime(line, ref)
	return t
}

// LineTime returns the time a log line carries and whether it carries one,
// in UTC. Read, best effort:
//
//   - RFC 3339 leading the line, with or without fraction and zone, "T" or
//     a space between date and time, optionally in square brackets; a
//     comma before the fraction (log4j, Python's logging: "10:02:03,250");
//     a missing zone (or a zone name after a space, as Postgres prints
//     "2026-03-14 10:02:03.123 UTC") means UTC;
//   - a logfmt time key leading the line (time=, ts=, timestamp=, t=);
//   - JSON lines' "ts", "time", "timestamp" or "@timestamp" field, a string
//     or a number since the Unix epoch in seconds (with a fraction),
//     milliseconds, microseconds or nanoseconds (pino, zap, bunyan);
//   - klog headers ("I0314 10:02:03.123456") and syslog ("Mar 14
//     10:02:03"), whose year is taken from ref: a yearless time more than a
//     day after ref is placed in the year before (a zero ref is now);
//   - "2006/01/02 15:04:05" leading the line (nginx's error log, Go's log
//     package; local time taken as UTC);
//   - the Common Log Format's "[02/Jan/2006:15:04:05 -0700]" after the
//     client address (nginx's and Apache's access logs);
//   - Ruby's Logger ("E, [2006-01-02T15:04:05.000000 #1] ERROR -- : ...").
//
// The common form ("2006-01-02T15:04:05.000Z") is read without allocating.
func LineTime(line []byte, ref time.Time) (time.Time, bool) {
	return lineTime(line, ref)
}

func lineTime[T logText](line T, ref time.Time) (time.Time, bool) {
	if len(line) < 14 {
		return time.Time{}, false
	}
	s := line
	// JSON lines carry their time in a field.
	if s[0] == '{' {
		if t, ok := jsonEpochTime(s); ok {
			return t, true
		}
		for _, key := range jsonTimeKeys {
			if i := index(s, key); i >= 0 {
				s = s[i+len(key):]
				break
			}
		}
		if len(s) < 14 || s[0] == '{' {
			return time.Time{}, false
		}
	}
	// logfmt lines lead with their time key (time=..., ts=...).
	for _, key := range logfmtTimeKeys {
		if s[0] == 't' && hasPrefix(s, key) {
			s = s[len(key):]
			if len(s) > 0 && s[0] == '"' {
				s = s[1:]
			}
			break
		}
	}
	if len(s) > 4 && s[1] == ',' && s[2] == ' ' && s[3] == '[' && (s[0] == 'D' || s[0] == 'I' || s[0] == 'W' || s[0] == 'E' || s[0] == 'F' || s[0] == 'A') {
		// Ruby's Logger: "E, [2006-01-02T15:04:05.000000 #1] ERROR -- : ..."
		s = s[3:]
	}
	if len(s) > 0 && s[0] == '[' {
		s = s[1:]
	}
	s = afterRequestType(s)
	if len(s) < 14 {
		return time.Time{}, false
	}
	c := s[0]
	if c >= '0' && c <= '9' && len(s) >= 19 && s[4] == '-' && s[7] == '-' && s[10] == '\t' {
		// W3C extended logs (CloudFront's standard logs) put the date
		// and the time in two tab-separated fields.
		b := []byte(s[:19])
		b[10] = 'T'
		return parseISO(string(b))
	}
	switch {
	case c >= '0' && c <= '9' && len(s) >= 19 && s[4] == '-' && s[7] == '-':
		return isoPrefix(s)
	case c == 'I' || c == 'W' || c == 'E' || c == 'F':
		if isDigits(s[1:5]) && s[5] == ' ' {
			// klog: Lmmdd hh:mm:ss.uuuuuu
			end := 6
			for end < len(s) && end < 21 && (s[end] == ':' || s[end] == '.' || (s[end] >= '0' && s[end] <= '9')) {
				end++
			}
			if t, err := time.Parse("0102 15:04:05.999999999", string(s[1:end])); err == nil {
				return withYear(t, ref), true
			}
		}
	}
	if c >= 'A' && c <= 'W' {
		if t, ok := levelThreadTime(s); ok {
			return t, true
		}
	}
	if c >= '0' && c <= '9' {
		if t, ok := redisTime(s); ok {
			return t, true
		}
	}
	if c >= 'A' && c <= 'S' && len(s) >= 15 && s[3] == ' ' && s[9] == ':' {
		// syslog: Jan _2 15:04:05
		if t, err := time.Parse(time.Stamp, string(s[:15])); err == nil {
			return withYear(t, ref), true
		}
	}
	if len(s) >= 19 && s[4] == '.' && s[7] == '.' && s[10] == ' ' && s[13] == ':' && isDigits(s[:4]) {
		// ClickHouse's server log: 2006.01.02 15:04:05.999999.
		end := 19
		for end < len(s) && end < 26 && (s[end] == '.' || isDigitAt(s, end)) {
			end++
		}
		if t, err := time.Parse("2006.01.02 15:04:05.999999", string(s[:end])); err == nil {
			return t.UTC(), true
		}
	}
	if len(s) >= 19 && s[4] == '/' && s[7] == '/' && s[10] == ' ' && s[13] == ':' {
		// nginx's error log, Go's log package.
		t, err := time.Parse("2006/01/02 15:04:05", string(s[:19]))
		if err != nil {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	if line[0] == '{' {
		return time.Time{}, false
	}
	return clfTime(line)
}

// afterRequestType skips the request type an AWS load balancer's access
// log leads with (an ALB's "https 2026-11-25T08:00:01.372378Z ...", an
// NLB's "tls 2.0 2026-...") to the time that follows it; other lines are
// returned as they are.
func afterRequestType[T logText](s T) T {
	for _, p := range []string{"http ", "https ", "h2 ", "grpcs ", "ws ", "wss ", "tls 2.0 "} {
		if hasPrefix(s, p) && len(s) > len(p)+19 && isDigits(s[len(p):len(p)+4]) && s[len(p)+4] == '-' {
			return s[len(p):]
		}
	}
	return s
}

// levelThreadTime reads the stamp of log4j layouts that lead with the
// level and the thread, as Cassandra's system.log does: "ERROR
// [ReadStage-1] 2026-11-25 12:40:00,187 ReadCommand.java:571 - ...".
func levelThreadTime[T logText](s T) (time.Time, bool) {
	i := 0
	for i < len(s) && i < 6 && s[i] >= 'A' && s[i] <= 'Z' {
		i++
	}
	if i < 4 || i >= len(s) || s[i] != ' ' {
		return time.Time{}, false
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) || s[i] != '[' {
		return time.Time{}, false
	}
	j := indexByte(s[i:min(len(s), i+100)], ']')
	if j < 0 {
		return time.Time{}, false
	}
	s = s[i+j+1:]
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	if len(s) < 19 || !isDigitAt(s, 0) || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	return isoPrefix(s)
}

// redisTime reads the stamp of Redis' and Sentinel's own log lines:
// "1:M 25 Nov 2026 15:01:12.720 * Ready to accept connections", the pid,
// the role (X sentinel, C child, S replica, M master), then the time.
func redisTime[T logText](s T) (time.Time, bool) {
	i := 0
	for i < len(s) && i < 8 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || len(s) < i+27 || s[i] != ':' || s[i+2] != ' ' {
		return time.Time{}, false
	}
	switch s[i+1] {
	case 'X', 'C', 'S', 'M':
	default:
		return time.Time{}, false
	}
	t, err := time.Parse("02 Jan 2006 15:04:05.000", string(s[i+3:i+27]))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// clfTime reads the Common Log Format's "[02/Jan/2006:15:04:05 -0700]"
// within the first 120 bytes of a line.
func clfTime[T logText](line T) (time.Time, bool) {
	head := line[:min(len(line), 120)]
	i := indexByte(head, '[')
	if i < 0 || len(line) < i+28 || line[i+3] != '/' || line[i+7] != '/' || line[i+12] != ':' || line[i+27] != ']' {
		return time.Time{}, false
	}
	t, err := time.Parse("02/Jan/2006:15:04:05 -0700", string(line[i+1:i+27]))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// isoPrefix reads the RFC 3339 time leading s: up to the first space,
// tab, "]" or a comma that does not start a fraction.
func isoPrefix[T logText](s T) (time.Time, bool) {
	end := 19
	for end < len(s) && end < 40 {
		ch := s[end]
		if ch == ' ' || ch == ']' || ch == '\t' || ch == ',' && end > 19 && !isDigitAt(s, end+1) {
			break
		}
		end++
	}
	b := []byte(s[:end]) // bytes: as they are; a string: on the stack
	if t, ok := utcTime(b); ok {
		return t, true
	}
	return parseISO(string(b))
}

// parseISO reads an RFC 3339 time with the time package: "T" or a space
// between date and time, a comma or a dot before the fraction, no zone
// meaning UTC.
func parseISO(s string) (time.Time, bool) {
	if len(s) < 19 {
		return time.Time{}, false
	}
	if s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	for i := 19; i < len(s); i++ {
		if s[i] == ',' { // log4j and Python: 10:02:03,123
			s = s[:i] + "." + s[i+1:]
			break
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s[:19]); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// utcTime reads the common form of a log timestamp without allocating:
// "2006-01-02T15:04:05Z" with a fraction of up to nine digits (or a space
// for the "T"), every field in range and a day of month up to 28. Any other
// form is left to parseISO (ok false), which reads it the same way.
func utcTime(b []byte) (time.Time, bool) {
	n := len(b)
	if n < 20 || n > 30 || b[n-1] != 'Z' || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(i, w int) (int, bool) {
		v := 0
		for _, c := range b[i : i+w] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if n > 20 {
		// ".d" to ".ddddddddd" before the Z.
		if b[19] != '.' || n < 22 {
			return time.Time{}, false
		}
		frac, ok := num(20, n-21)
		if !ok {
			return time.Time{}, false
		}
		for range 9 - (n - 21) {
			frac *= 10
		}
		nsec = frac
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// jsonEpochTime reads a JSON line's time given as a number since the Unix
// epoch, in seconds (10 digits, maybe a fraction), milliseconds (13),
// microseconds (16) or nanoseconds (19), between 2000 and 2100.
func jsonEpochTime[T logText](line T) (time.Time, bool) {
	for _, key := range jsonEpochKeys {
		i := index(line, key)
		if i < 0 {
			continue
		}
		rest := line[i+len(key):]
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		n := 0
		for n < len(rest) && n < 20 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		digits := rest[:n]
		var frac T
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
		for j := 0; j < len(digits); j++ {
			v = v*10 + int64(digits[j]-'0')
		}
		var t time.Time
		switch len(digits) {
		case 10:
			ns := int64(0)
			for j := 0; j < 9; j++ {
				ns *= 10
				if j < len(frac) {
					ns += int64(frac[j] - '0')
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

// index is strings.Index for either form of a line.
func index[T logText](s T, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i] == sub[0] && hasPrefix(s[i:], sub) {
			return i
		}
	}
	return -1
}

func indexByte[T logText](s T, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func hasPrefix[T logText](s T, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if s[i] != p[i] {
			return false
		}
	}
	return true
}

func isDigitAt[T logText](s T, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

func isDigits[T logText](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
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
