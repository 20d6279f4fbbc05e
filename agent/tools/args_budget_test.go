package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestParseTimeAndWindow(t *testing.T) {
	now := time.Date(2026, 3, 14, 10, 42, 0, 0, time.UTC)
	env := &Env{Sources: &evidence.Sources{Now: func() time.Time { return now }}}
	cases := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"now", now, false},
		{"1h", now.Add(-time.Hour), false},
		{"-30m", now.Add(-30 * time.Minute), false},
		{"2d", now.Add(-48 * time.Hour), false},
		{"1w", now.Add(-7 * 24 * time.Hour), false},
		{"2026-03-14T09:00:00Z", time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC), false},
		{"2026-03-14T11:00:00+01:00", time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
		{"2026-03-14", time.Time{}, true},
		{"-1h-", time.Time{}, true},
	}
	for _, tc := range cases {
		got, err := ParseTime(env, "t", "since", tc.in, time.Time{})
		if tc.bad {
			if evidence.CodeOf(err) != evidence.CodeInvalid || !strings.Contains(err.Error(), `"since"`) {
				t.Errorf("ParseTime(%q): %v, want invalid naming since", tc.in, err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	s, u, err := ParseWindow(env, "t", "since", "", "until", "")
	if err != nil || !u.Equal(now) || !s.Equal(now.Add(-time.Hour)) {
		t.Errorf("default window: %v %v %v", s, u, err)
	}
	s, u, err = ParseWindow(env, "t", "since", "", "until", "2h")
	if err != nil || !s.Equal(now.Add(-3*time.Hour)) || !u.Equal(now.Add(-2*time.Hour)) {
		t.Errorf("window relative to until: %v %v %v", s, u, err)
	}
	if _, _, err := ParseWindow(env, "t", "since", "1h", "until", "2h"); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("inverted window: %v", err)
	}
}

func TestParseStep(t *testing.T) {
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		span time.Duration
		want time.Duration
		bad  bool
	}{
		{"", time.Hour, 15 * time.Second, false},
		{"", 24 * time.Hour, 10 * time.Minute, false},
		{"30s", time.Hour, 30 * time.Second, false},
		{"60", time.Hour, time.Minute, false},
		{"1d", 30 * 24 * time.Hour, 24 * time.Hour, false},
		{"0.5", time.Hour, 0, true},
		{"1s", 24 * time.Hour, 0, true},
		{"fast", time.Hour, 0, true},
	}
	for _, tc := range cases {
		got, err := ParseStep("t", "step", tc.in, start, start.Add(tc.span))
		if tc.bad != (err != nil) || !tc.bad && got != tc.want {
			t.Errorf("ParseStep(%q over %s) = %s, %v; want %s", tc.in, tc.span, got, err, tc.want)
		}
	}
}

func TestNamespaceArg(t *testing.T) {
	env := &Env{Settings: map[string]map[string]any{"kubernetes": {"default_namespace": "shop"}}}
	for in, want := range map[string]string{"": "shop", "prod": "prod", "*": "", "all": ""} {
		if got := namespaceArg(env, in); got != want {
			t.Errorf("namespaceArg(%q) = %q, want %q", in, got, want)
		}
	}
	if got := namespaceArg(&Env{}, ""); got != "" {
		t.Errorf("no default: %q", got)
	}
	if _, err := namespaceRequired(&Env{}, "describe_pod", ""); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("namespaceRequired: %v", err)
	}
}

func TestBound(t *testing.T) {
	small := []string{"a", "b"}
	if b, cut := Bound(small, 100); cut || string(b) != `["a","b"]` {
		t.Errorf("small: %s %v", b, cut)
	}
	var big []string
	for i := 0; i < 1000; i++ {
		big = append(big, strings.Repeat("x", 50))
	}
	cases := []struct {
		name string
		v    any
		max  int
	}{
		{"array", big, 2000},
		{"object with array", &evidence.LogResult{Lines: []evidence.LogLine{{Text: strings.Repeat("y", 100)}, {Text: strings.Repeat("z", 100)}, {Text: "w"}}, Matched: 3}, 200},
		{"string", strings.Repeat("s", 5000), 1000},
		{"default budget", big, 0},
	}
	for _, tc := range cases {
		out, cut := Bound(tc.v, tc.max)
		limit := tc.max
		if limit == 0 {
			limit = DefaultMaxOutput
		}
		if !cut || len(out) > limit || !json.Valid(out) || !strings.Contains(string(out), `"truncated":true`) {
			t.Errorf("%s: cut %v, %d bytes (max %d), valid %v: %.200s", tc.name, cut, len(out), limit, json.Valid(out), out)
		}
		if !strings.Contains(string(out), "note") {
			t.Errorf("%s: no note of what was cut", tc.name)
		}
	}
}

func TestCapPreferring(t *testing.T) {
	in := []int{1, 2, 3, 4, 5, 6}
	got := capPreferring(in, 3, func(v *int) bool { return *v%2 == 0 })
	if len(got) != 3 || got[0] != 2 || got[1] != 4 || got[2] != 6 {
		t.Errorf("capPreferring: %v", got)
	}
	got = capPreferring(in, 4, func(v *int) bool { return *v == 5 })
	if len(got) != 4 || got[0] != 1 || got[3] != 5 {
		t.Errorf("capPreferring fill: %v", got)
	}
}
