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
	return &bundleLogs{fsys: b.FS, files: files, ref: b.CapturedAt}
}

type bundleLogs struct {
	fsys  fs.FS
	files map[string]string // source → path
	ref   time.Time         // when the bundle was captured: the year of yearless times
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
	m.ref = l.ref
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
	// ref resolves the year of yearless times (syslog, klog): the
	// bundle's capture time, else the window's end, else now.
	ref time.Time
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

// ScanLog streams the plain-text log r (one event a line, each with the
// time evidence.LineTime reads) and calls fn for each line of source that
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
	ref := m.ref
	if ref.IsZero() {
		ref = m.until
	}
	for {
		line, err := readLine(br, &long)
		if len(line) > 0 || err == nil {
			count++
			if count&1023 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if t, ok := evidence.LineTime(line, ref); ok {
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
