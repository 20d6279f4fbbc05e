package evidence

import (
	"strings"
	"testing"
	"time"
)

func TestParseLogTime(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 42, 0, 0, time.UTC)
	cases := []struct {
		line string
		want time.Time
	}{
		{"2026-03-14T10:02:03Z INFO x", time.Date(2026, 3, 14, 10, 2, 3, 0, time.UTC)},
		{"2026-03-14T11:02:03.5+01:00 x", time.Date(2026, 3, 14, 10, 2, 3, 5e8, time.UTC)},
		{"2026-03-14 10:02:03 INFO x", time.Date(2026, 3, 14, 10, 2, 3, 0, time.UTC)},
		{"2026-03-14 10:02:03,250 INFO x", time.Date(2026, 3, 14, 10, 2, 3, 25e7, time.UTC)},
		{"[2026-03-14 10:39:10.512][1][warning] x", time.Date(2026, 3, 14, 10, 39, 10, 512e6, time.UTC)},
		{"I0314 10:02:03.123456       1 main.go:42] x", time.Date(2026, 3, 14, 10, 2, 3, 123456e3, time.UTC)},
		{"E1231 23:59:59.000000 1 x.go:1] last year", time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"Mar 14 10:02:03 host sshd[1]: x", time.Date(2026, 3, 14, 10, 2, 3, 0, time.UTC)},
		{"java.lang.OutOfMemoryError: Java heap space", time.Time{}},
		{"\tat com.example.X(X.java:1)", time.Time{}},
		{"2026-99-14T10:02:03Z bad date", time.Time{}},
		{"short", time.Time{}},
		{"Info: 1234 5678", time.Time{}},
		{`{"level":30,"time":1773484923259,"pid":1,"msg":"request completed"}`, time.Date(2026, 3, 14, 10, 42, 3, 259e6, time.UTC)},
		{`{"level":"info","ts":1773484923.2591,"caller":"x.go:1","msg":"m"}`, time.Date(2026, 3, 14, 10, 42, 3, 259100e3, time.UTC)},
		{`{"ts": 1773484923, "msg": "m"}`, time.Date(2026, 3, 14, 10, 42, 3, 0, time.UTC)},
		{`{"time":1773484923259000000,"msg":"ns"}`, time.Date(2026, 3, 14, 10, 42, 3, 259e6, time.UTC)},
		{`{"time":12,"msg":"not an epoch"}`, time.Time{}},
		{`{"time":1773484923259x,"msg":"m"}`, time.Time{}},
	}
	for _, tc := range cases {
		if got := ParseLogTime(tc.line, ref); !got.Equal(tc.want) {
			t.Errorf("ParseLogTime(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestPodLogCollector(t *testing.T) {
	q := PodLogQuery{Since: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC), Pattern: "E", Limit: 2}
	c, err := NewPodLogCollector("kubernetes", q, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"untimed E before any timestamp", "2026-03-14T09:59:00Z E old", "trace E of old",
		"2026-03-14T10:00:00Z E one", "trace E of one", "2026-03-14T10:01:00Z E two", "2026-03-14T10:02:00Z nothing"} {
		c.Add("p/c", l)
	}
	r := c.Result()
	if r.Scanned != 7 || r.Matched != 3 || !r.Truncated || len(r.Lines) != 2 || r.Lines[0].Text != "trace E of one" || !r.Lines[0].Time.IsZero() || r.Lines[1].Text != "2026-03-14T10:01:00Z E two" {
		t.Errorf("result %+v", r)
	}
	if _, err := NewPodLogCollector("kubernetes", PodLogQuery{Pattern: "("}, time.Time{}); CodeOf(err) != CodeInvalid {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestPodLogCollectorUntimedLines(t *testing.T) {
	since := time.Date(2026, 5, 20, 9, 0, 0, 0, time.UTC)
	until := since.Add(30 * time.Minute)
	cases := []struct {
		name  string
		lines []string
		limit int
		want  []string
	}{
		{"no timestamp at all", []string{"starting", "DEPLOY_ENV is undefined"}, 0, []string{"starting", "DEPLOY_ENV is undefined"}},
		{"first timestamp in the window", []string{"boot", "2026-05-20T09:10:00Z ready"}, 0, []string{"boot", "2026-05-20T09:10:00Z ready"}},
		{"first timestamp before the window", []string{"boot", "2026-05-20T08:10:00Z ready", "2026-05-20T09:10:00Z tick"}, 0, []string{"2026-05-20T09:10:00Z tick"}},
		{"first timestamp after the window", []string{"boot", "2026-05-20T10:10:00Z late"}, 0, []string{"boot"}},
		{"limit keeps the last", []string{"a", "b", "c", "d", "e"}, 2, []string{"d", "e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewPodLogCollector("kubernetes", PodLogQuery{Since: since, Until: until, Limit: tc.limit}, since)
			if err != nil {
				t.Fatal(err)
			}
			c.StartStream()
			for _, l := range tc.lines {
				c.Add("p/c", l)
			}
			res := c.Result()
			var got []string
			for _, l := range res.Lines {
				got = append(got, l.Text)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			if tc.limit > 0 && (res.Matched != len(tc.lines) || !res.Truncated) {
				t.Errorf("matched %d truncated %v", res.Matched, res.Truncated)
			}
		})
	}
}
