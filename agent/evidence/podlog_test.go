package evidence

import (
	"strings"
	"testing"
	"time"
)

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
