package bundle

import (
	"testing"
	"time"
)

// TestLineTimeWebServer checks the timestamps of nginx's error log (and
// Go's log package) and of the Common Log Format of access logs.
func TestLineTimeWebServer(t *testing.T) {
	at := time.Date(2026, 11, 24, 14, 4, 17, 0, time.UTC)
	cases := []struct {
		line string
		want time.Time
		ok   bool
	}{
		{`2026/11/24 14:04:17 [crit] 31#31: *482110 connect() to 10.42.2.19:8080 failed (99: Cannot assign requested address) while connecting to upstream`, at, true},
		{`10.20.0.14 - - [24/Nov/2026:14:04:17 +0000] "GET /v1/quotes?zip=10000 HTTP/1.1" 200 812 "-" "okhttp/4.12.0" 0.018 0.016`, at, true},
		{`203.0.113.9 - frank [24/Nov/2026:15:04:17 +0100] "POST /login HTTP/1.0" 302 0`, at, true},
		{`2026/13/24 14:04:17 not a date`, time.Time{}, false},
		{`10.20.0.14 - - [not a time at all in these brackets] "GET / HTTP/1.1" 200`, time.Time{}, false},
	}
	for _, c := range cases {
		got, ok := LineTime([]byte(c.line))
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: LineTime = %v, %v; want %v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
