package bundle

import (
	"testing"
	"time"
)

// TestLineTimeJSON checks that a JSON log line (zap, pino, logrus,
// bunyan) is placed at the time its field holds: such lines used to have
// no time in logs/*.log and were left out of every window.
func TestLineTimeJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 14, 6, 11, 100e6, time.UTC)
	cases := []struct {
		line string
		want time.Time
		ok   bool
	}{
		{`{"level":"error","ts":"2026-11-24T14:06:11.100Z","caller":"acquirer/client.go:97","msg":"authorize failed","error":"x509: certificate signed by unknown authority"}`, at.Truncate(time.Second), true},
		{`{"level":30,"time":1795529171100,"pid":1,"msg":"request completed"}`, at, true},
		{`{"level":"info","msg":"started","time":"2026-11-24T14:06:11Z"}`, at.Truncate(time.Second), true},
		{`{"level":"info","msg":"no time field in this line at all"}`, time.Time{}, false},
		{`2026-11-24T14:06:11.100Z info started`, at, true},
	}
	for _, c := range cases {
		got, ok := LineTime([]byte(c.line))
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: LineTime = %v, %v; want %v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
