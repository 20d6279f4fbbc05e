package evidence

import (
	"testing"
	"time"
)

// FuzzLineTime feeds hostile lines to the reader of a log line's time:
// it must return (no panic), read the same from a string as from bytes,
// answer in UTC, and its allocation-free path must agree with the time
// package whenever it takes a line. Seeds are every form TestLineTime
// reads and the common form's near misses.
func FuzzLineTime(f *testing.F) {
	for _, c := range lineTimeCases() {
		f.Add(c.line)
	}
	for _, c := range fastPathCases {
		f.Add(c + " rest")
	}
	f.Fuzz(func(t *testing.T, line string) {
		ref := lineTimeRef
		b, ok := LineTime([]byte(line), ref)
		if s := ParseLogTime(line, ref); !s.Equal(b) {
			t.Fatalf("%q: ParseLogTime %v, LineTime %v", line, s, b)
		}
		if ok && b.Location() != time.UTC {
			t.Fatalf("%q: %v not in UTC", line, b)
		}
		if fast, fastOK := utcTime([]byte(line)); fastOK {
			if want, wantOK := parseISO(line); !wantOK || !fast.Equal(want) {
				t.Fatalf("%q: fast %v, the time package %v, %v", line, fast, want, wantOK)
			}
		}
	})
}
