package bundle

import (
	"testing"
	"time"
)

// TestLineTimeFastPath checks that the allocation-free reading of the
// common timestamp form answers exactly as parsing with the time package
// does, on that form and on its near misses.
func TestLineTimeFastPath(t *testing.T) {
	cases := []string{
		"2026-03-14T10:42:00Z rest",
		"2026-03-14T10:42:00.1Z rest",
		"2026-03-14T10:42:00.123Z rest",
		"2026-03-14T10:42:00.123456Z rest",
		"2026-03-14T10:42:00.123456789Z rest",
		"2026-03-14T10:42:00.1234567891Z rest",
		"2026-03-14 10:42:00.5Z rest",
		"[2026-03-14T10:42:00.5Z] rest",
		"2026-03-14T10:42:00.Z rest",
		"2026-03-14T10:42:00.12aZ rest",
		"2026-03-14T10:42:00+02:00 rest",
		"2026-03-14T10:42:00.25-07:00 rest",
		"2026-03-14T10:42:00 rest of the line",
		"2026-02-29T10:42:00Z not a leap year",
		"2024-02-29T10:42:00Z a leap year",
		"2026-04-31T10:42:00Z",
		"2026-12-31T23:59:59.999999999Z",
		"2026-00-10T10:42:00Z",
		"2026-13-10T10:42:00Z",
		"2026-03-00T10:42:00Z",
		"2026-03-14T24:00:00Z",
		"2026-03-14T10:60:00Z",
		"2026-03-14T10:42:60Z",
		"2026-03-14T1a:42:00Z",
		"0000-01-01T00:00:00Z",
		"2026-03-14X10:42:00Z",
		"2026-3-14T10:42:00Z rest",
	}
	for _, c := range cases {
		got, gotOK := LineTime([]byte(c))
		line := []byte(c)
		if line[0] == '[' {
			line = line[1:]
		}
		end := 19
		for end < len(line) && end < 40 && line[end] != ' ' && line[end] != ']' && line[end] != '\t' {
			end++
		}
		want, wantOK := parseLineTime(line[:end])
		if gotOK != wantOK || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("%q: LineTime = %v, %v; parsed with the time package: %v, %v", c, got, gotOK, want, wantOK)
		}
	}
	if got, ok := LineTime([]byte("2026-03-14T10:42:00.5Z x")); !ok || !got.Equal(time.Date(2026, 3, 14, 10, 42, 0, 5e8, time.UTC)) {
		t.Errorf("got %v %v", got, ok)
	}
}

// TestLineTimeEveryDay compares the fast path with the time package on
// every day from 0001 to 2200 at a varying time of day.
func TestLineTimeEveryDay(t *testing.T) {
	day := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2200, 12, 31, 0, 0, 0, 0, time.UTC)
	for i := 0; !day.After(end); i++ {
		at := day.Add(time.Duration(i%86400) * time.Second).Add(time.Duration(i%1000) * time.Millisecond)
		line := []byte(at.Format("2006-01-02T15:04:05.000Z") + " x")
		got, ok := LineTime(line)
		want, wantOK := parseLineTime(line[:24])
		if ok != wantOK || got != want {
			t.Fatalf("%s: LineTime = %v %v, the time package: %v %v", line, got, ok, want, wantOK)
		}
		day = day.AddDate(0, 0, 1)
	}
}
