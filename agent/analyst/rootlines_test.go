package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
)

func TestRootCauseScore(t *testing.T) {
	for _, c := range []struct {
		line string
		min  int
		max  int
	}{
		{"Caused by: org.postgresql.util.PSQLException: ERROR: column \"x\" does not exist", 4, 4},
		{"org.postgresql.util.PSQLException: ERROR: column o.discount_code does not exist", 3, 3},
		{"ValueError: invalid literal for int() with base 10: 'abc'", 3, 3},
		{"panic: runtime error: invalid memory address or nil pointer dereference", 3, 3},
		{"Servlet.service() for servlet [dispatcherServlet] threw exception [Request processing failed] with root cause", -1, -1},
		{"Traceback (most recent call last):", -1, -1},
		{"\tat org.example.Foo.bar(Foo.java:42)", -1, -1},
		{"ERROR: relation \"orders\" does not exist", 2, 2},
		{"level=error msg=\"request failed\"", 0, 0},
	} {
		if got := RootCauseScore(c.line); got < c.min || got > c.max {
			t.Errorf("RootCauseScore(%q) = %d, want %d..%d", c.line, got, c.min, c.max)
		}
	}
}

func pts(start time.Time, step time.Duration, vs ...float64) []evidence.Point {
	out := make([]evidence.Point, len(vs))
	for i, v := range vs {
		out[i] = evidence.Point{T: start.Add(time.Duration(i) * step), V: v}
	}
	return out
}

func TestSteadyClimb(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		vs   []float64
		want bool
	}{
		{"steady climb", []float64{2, 2, 2, 5, 12, 20, 31, 40, 52, 60, 71, 80}, true},
		{"flat", []float64{10, 11, 10, 12, 11, 10, 11, 12, 10, 11, 10, 11}, false},
		{"one step", []float64{2, 2, 2, 2, 2, 2, 80, 80, 80, 80, 80, 80}, false},
		{"noisy, not steady", []float64{2, 30, 5, 40, 8, 50, 10, 60, 12, 70, 15, 80}, false},
		{"too small", []float64{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}, false},
	} {
		_, ok := SteadyClimb(pts(t0, 5*time.Minute, c.vs...), 10)
		if ok != c.want {
			t.Errorf("%s: SteadyClimb = %v, want %v", c.name, ok, c.want)
		}
	}
}

func TestDetectConnLeakNeedsFlatLoad(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0, Start: t0.Add(20 * time.Minute), End: t0.Add(60 * time.Minute)}
	inUse := pts(t0, 5*time.Minute, 3, 3, 3, 8, 15, 22, 30, 38, 45, 52, 60, 68, 75)
	flat := pts(t0, 5*time.Minute, 100, 101, 99, 100, 102, 100, 98, 101, 100, 99, 100, 101, 100)
	surge := pts(t0, 5*time.Minute, 100, 100, 100, 150, 200, 260, 320, 380, 440, 500, 560, 620, 700)
	pool := MetricSet{Name: "go_sql_stats_connections_in_use", Class: MetricSaturation, Series: []evidence.Series{{Labels: evidence.Labels{"pod": "ledger-7d9f8b6c5d-abcde", "namespace": "fin"}, Points: inUse}}}
	reqs := func(p []evidence.Point) MetricSet {
		return MetricSet{Name: "http_requests_total", Class: MetricRequests, Series: []evidence.Series{{Labels: evidence.Labels{"service": "ledger", "namespace": "fin"}, Points: p}}}
	}
	fs := DetectConnLeak([]MetricSet{pool, reqs(flat)}, w)
	if len(fs) != 1 || fs[0].Kind != KindConnLeak || fs[0].Subject != "ledger" {
		t.Fatalf("flat load: got %+v, want one connection leak on ledger", fs)
	}
	if d := describeConnLeak(&Hypothesis{Kind: KindConnLeak, Subject: "ledger", Primary: []*Finding{&fs[0]}}); !strings.Contains(d, "connection leak") || !strings.Contains(d, "not released") {
		t.Errorf("description %q", d)
	}
	if fs := DetectConnLeak([]MetricSet{pool, reqs(surge)}, w); len(fs) != 0 {
		t.Errorf("load surge: got %+v, want no leak", fs)
	}
}

func TestImageGCFailedIsNotPressure(t *testing.T) {
	_, wgc := classifyEvent(&corev1.Event{Reason: "ImageGCFailed"})
	_, wp := classifyEvent(&corev1.Event{Reason: "EvictionThresholdMet"})
	if wgc >= 0.5 || wp < 0.8 {
		t.Errorf("ImageGCFailed weight %.2f (want < 0.5), EvictionThresholdMet %.2f (want >= 0.8)", wgc, wp)
	}
}

func TestNetworkChangeByNamespace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	timeout := &Finding{Kind: KindTimeout, Subject: "fraud", Namespace: "payments", Time: t0.Add(time.Minute), Facts: map[string]string{"caller": "payout"}}
	h := &Hypothesis{Kind: KindTimeout, Subject: "fraud", Primary: []*Finding{timeout}, Onset: timeout.Time}
	for _, c := range []struct {
		name string
		c    *Finding
		want bool
	}{
		{"config change naming a NetworkPolicy", &Finding{Kind: KindConfigChange, Subject: "payments", Time: t0, Facts: map[string]string{"description": "apply NetworkPolicy default-deny-egress"}}, true},
		{"deploy of another service", &Finding{Kind: KindDeploy, Subject: "search", Time: t0, Facts: map[string]string{"description": "search 1.2"}}, false},
	} {
		if got := nearestChange(h, []*Finding{c.c}) != nil; got != c.want {
			t.Errorf("%s: trigger = %v, want %v", c.name, got, c.want)
		}
	}
	h.Trigger = &Finding{Kind: KindConfigChange, Subject: "payments", Time: t0, Facts: map[string]string{"description": "apply NetworkPolicy default-deny-egress"}}
	if d := describe(h, Scope{}); !strings.Contains(d, "egress from payout is blocked") {
		t.Errorf("description %q", d)
	}
}
