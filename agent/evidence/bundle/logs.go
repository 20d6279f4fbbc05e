package bundle

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rootcause/rootcause/agent/evidence"
)

// MaxLogLine is the longest log line kept; longer lines are cut to this many
// bytes (the rest of the line is skipped, never loaded whole).
const MaxLogLine = 64 << 10

// logs returns the bundle's Logs source, or nil when the bundle has none.
// Every logs/**/*.log file is a source named by its path under logs/
// without ".log" (logs/nginx.log is "nginx", logs/db/pg.log is "db/pg").
func (b *Bundle) logs() evidence.Logs {
	files := map[string]string{}
	_ = fs.WalkDir(b.FS, "logs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are skipped; absent dir is no source
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".log") {
			files[strings.TrimSuffix(strings.TrimPrefix(p, "logs/"), ".log")] = p
		}
		return nil
	})
	if len(files) == 0 {
		return nil
	}
	return &bundleLogs{fsys: b.FS, files: files}
}

type bundleLogs struct {
	fsys  fs.FS
	files map[string]string // source → path
}

func (l *bundleLogs) Sources(ctx context.Context) ([]string, error) {
	out := make([]string, 0, len(l.files))
	for s := range l.files {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

func (l *bundleLogs) Scan(ctx context.Context, q evidence.LogQuery, fn func(evidence.LogLine) error) error {
	m, err := NewLogMatcher("logs", q)
	if err != nil {
		return err
	}
	var sources []string
	if q.Source != "" {
		if _, ok := l.files[q.Source]; !ok {
			return evidence.Errorf("logs", evidence.CodeNotFound, "no log source %q in the bundle (list_log_sources lists them)", q.Source)
		}
		sources = []string{q.Source}
	} else {
		sources, _ = l.Sources(ctx)
	}
	for _, s := range sources {
		f, err := l.fsys.Open(l.files[s])
		if err != nil {
			return &evidence.Error{Source: "logs", Code: evidence.CodeMalformed, File: l.files[s], Err: err}
		}
		err = ScanLog(ctx, f, s, m, fn)
		f.Close()
		if errors.Is(err, evidence.ErrStop) {
			return nil
		}
		if err != nil {
			var ee *evidence.Error
			if errors.As(err, &ee) || ctx.Err() != nil {
				return err
			}
			return &evidence.Error{Source: "logs", Code: evidence.CodeMalformed, File: l.files[s], Err: err}
		}
	}
	return nil
}

// LogMatcher is a compiled LogQuery: the pattern compiled once, the window.
type LogMatcher struct {
	re           *regexp.Regexp
	since, until time.Time
}

// NewLogMatcher compiles q; an invalid pattern is an evidence.Error with
// code invalid for source.
func NewLogMatcher(source string, q evidence.LogQuery) (*LogMatcher, error) {
	m := &LogMatcher{since: q.Since, until: q.Until}
	if q.Pattern != "" {
		re, err := regexp.Compile(q.Pattern)
		if err != nil {
			return nil, evidence.Errorf(source, evidence.CodeInvalid, "pattern %q is not a valid regular expression: %v", q.Pattern, err)
		}
		m.re = re
	}
	return m, nil
}

// InWindow reports whether t is within the matcher's window. A zero t (a
// line before any timestamp) is outside any window that has a bound.
func (m *LogMatcher) InWindow(t time.Time) bool {
	if t.IsZero() {
		return m.since.IsZero() && m.until.IsZero()
	}
	if !m.since.IsZero() && t.Before(m.since) {
		return false
	}
	if !m.until.IsZero() && t.After(m.until) {
		return false
	}
	return true
}

// Until returns the window's end (zero: none).
func (m *LogMatcher) Until() time.Time { return m.until }

// MatchText reports whether text matches the pattern.
func (m *LogMatcher) MatchText(text string) bool { return m.re == nil || m.re.MatchString(text) }

// ScanLog streams the plain-text log r (one event a line, each starting
// with an RFC 3339 timestamp) and calls fn for each line of source that
// matches m, in file order. Lines that do not start with a parsable
// timestamp (stack traces, wrapped messages) inherit the time of the
// previous line; lines before the first timestamp have a zero time and are
// excluded by any time bound. Lines longer than MaxLogLine are cut; invalid
// UTF-8 is replaced by U+FFFD. Memory is bounded by MaxLogLine whatever the
// size of r. fn's error (including evidence.ErrStop) is returned as is.
// The scan stops early once a line's time is past the window's end, as a
// log file is in time order.
func ScanLog(ctx context.Context, r io.Reader, source string, m *LogMatcher, fn func(evidence.LogLine) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var (
		last  time.Time
		long  []byte
		count int
	)
	for {
		line, err := readLine(br, &long)
		if len(line) > 0 || err == nil {
			count++
			if count&1023 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if t, ok := LineTime(line); ok {
				last = t
			}
			if !m.until.IsZero() && !last.IsZero() && last.After(m.until.Add(time.Minute)) {
				// Past the window (with slack for slightly unordered lines).
				return nil
			}
			if m.InWindow(last) && (m.re == nil || m.re.Match(line)) {
				text := string(line)
				if !utf8.ValidString(text) {
					text = strings.ToValidUTF8(text, "\uFFFD")
				}
				if ferr := fn(evidence.LogLine{Time: last, Source: source, Text: text}); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line without its line ending, cut to
// MaxLogLine bytes. The slice is valid until the next call.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		*long = append((*long)[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			if room := MaxLogLine - len(*long); room > 0 {
				*long = append(*long, line[:min(room, len(line))]...)
			}
		}
		line = *long
		if len(line) > MaxLogLine {
			line = line[:MaxLogLine]
		}
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1] // bytes.TrimRight(line, "\r\n") without a cutset per line
	}
	if len(line) > MaxLogLine {
		line = line[:MaxLogLine]
	}
	return line, err
}

// LineTime parses the RFC 3339 timestamp at the start of line (optionally
// in square brackets; "T" or a space between date and time; a timestamp
// without a zone is taken as UTC).
func LineTime(line []byte) (time.Time, bool) {
	if len(line) < 20 {
		return time.Time{}, false
	}
	if line[0] == '{' {
		// A JSON line (zap, pino, logrus, bunyan) carries its time in a
		// field: "ts", "time", "timestamp" or "@timestamp".
		t := evidence.ParseLogTime(string(line), time.Time{})
		return t, !t.IsZero()
	}
	if line[0] == '[' {
		line = line[1:]
	}
	if line[0] < '0' || line[0] > '9' || len(line) < 20 || line[4] != '-' {
		return otherLineTime(line)
	}
	end := 19
	for end < len(line) && end < 40 && line[end] != ' ' && line[end] != ']' && line[end] != '\t' {
		end++
	}
	if t, ok := utcTime(line[:end]); ok {
		return t, true
	}
	return parseLineTime(line[:end])
}

// utcTime parses the common form of a log timestamp without allocating:
// "2006-01-02T15:04:05Z" with a fraction of up to nine digits (or a space
// for the "T"), every field in range and a day of month up to 28. Any other
// form is left to parseLineTime (ok false), which reads it the same way.
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

// parseLineTime parses a timestamp as RFC 3339 ("T" or a space between
// date and time; without a zone, UTC).
func parseLineTime(b []byte) (time.Time, bool) {
	s := string(b)
	if s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		// A space-separated date and time followed by a zone-less remainder.
		if t2, err2 := time.Parse("2006-01-02T15:04:05", s[:19]); err2 == nil {
			return t2.UTC(), true
		}
		return time.Time{}, false
	}
	return t.UTC(), true
}
