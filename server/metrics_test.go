package server

import (
	"bytes"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/metrics"
)

// scrape reads /metrics with the admin token and parses the text format.
func scrape(t *testing.T, h *harness) map[string]*dto.MetricFamily {
	t.Helper()
	r := h.do(req{path: "/metrics", token: "admin"})
	if r.status != 200 {
		t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, r.body)
	}
	return fams
}

// value returns the counter or gauge value of the series of name whose
// labels include want (0 when absent).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		ok := true
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func TestMetricsEndpoint(t *testing.T) {
	m := metrics.New("1.2.3-test")
	h := newHarness(t, func(c *Config) {
		c.Metrics = m
		c.RateLimits.Read = 3
	})
	me := map[string]string{"route": "/api/v1/auth/me", "method": "GET", "status": "200"}
	before := value(scrape(t, h), metrics.HTTPRequests, me)
	for range 2 {
		if r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"}); r.status != 200 {
			t.Fatalf("auth/me: %d", r.status)
		}
	}
	// The third read of the minute passes, the fourth is refused.
	h.do(req{path: "/api/v1/auth/me", token: "payments-read"})
	expectError(t, h.do(req{path: "/api/v1/auth/me", token: "payments-read"}), 429, db.ERATELIMITED)
	h.do(req{path: "/nowhere", token: "admin"})

	fams := scrape(t, h)
	if got := value(fams, metrics.HTTPRequests, me); got != before+3 {
		t.Errorf("%s{auth/me,200} = %v, want %v", metrics.HTTPRequests, got, before+3)
	}
	if got := value(fams, metrics.HTTPRequests, map[string]string{"route": "/api/v1/auth/me", "status": "429"}); got != 1 {
		t.Errorf("429 requests = %v, want 1", got)
	}
	if got := value(fams, metrics.HTTPRequests, map[string]string{"route": "unmatched", "status": "404"}); got != 1 {
		t.Errorf("unmatched 404 = %v, want 1", got)
	}
	if got := value(fams, metrics.HTTPDuration, map[string]string{"route": "/api/v1/auth/me"}); got < 4 {
		t.Errorf("latency observations for auth/me = %v, want >= 4", got)
	}
	if got := value(fams, metrics.RateLimitRejections, map[string]string{"class": "read"}); got != 1 {
		t.Errorf("%s{read} = %v, want 1", metrics.RateLimitRejections, got)
	}
	if got := value(fams, metrics.BuildInfo, map[string]string{"version": "1.2.3-test"}); got != 1 {
		t.Errorf("%s = %v", metrics.BuildInfo, got)
	}
	if fams["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}
	// Database transactions are observed when the store reports them.
	m.ObserveTx("write", 0)
	if got := value(scrape(t, h), metrics.DBTransactionDuration, map[string]string{"kind": "write"}); got != 1 {
		t.Errorf("%s{write} count = %v, want 1", metrics.DBTransactionDuration, got)
	}

	// Refused without authorization, and to team tokens.
	expectError(t, h.do(req{path: "/metrics"}), 401, db.EUNAUTHORIZED)
	expectError(t, h.do(req{path: "/metrics", token: "search-write"}), 403, db.EFORBIDDEN)
}

func TestMetricsDisabled(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(req{path: "/metrics", token: "admin"}), 503, db.EUNAVAILABLE)
}

func TestMetricsNilSafe(t *testing.T) {
	var m *metrics.Metrics
	m.ObserveHTTP("/x", "GET", 200, 0)
	m.RateLimited("read")
	m.Transition("planner", "pending")
	m.ToolCall("get_pod_logs", 0, nil)
	m.Delivery("webhook", "delivered")
	m.Retry("webhook")
	m.ObserveTx("read", 0)
	m.QueueDepthFunc(func() int { return 1 })
	m.DBFile("/nonexistent")
}
