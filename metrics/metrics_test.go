package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestInvestigationToolAndStoreMetrics(t *testing.T) {
	m := New("v1")
	depth := 3
	m.QueueDepthFunc(func() int { return depth })
	f := filepath.Join(t.TempDir(), "rootcause.db")
	if err := os.WriteFile(f, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	m.DBFile(f)
	m.Transition("planner", "pending")
	m.Transition("planner", "running")
	m.Transition("planner", "completed")
	m.InvestigationDone("planner", "completed", 2*time.Second)
	m.ToolCall("get_pod_logs", time.Millisecond, nil)
	m.ToolCall("get_pod_logs", time.Millisecond, errors.New("unreachable"))
	m.Delivery("webhook", "pending")
	m.Retry("webhook")
	m.ObserveHTTP("/x", "BREW", 200, time.Millisecond)

	counter := func(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
		for _, mt := range fams[name].GetMetric() {
			got := map[string]string{}
			for _, l := range mt.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				match = match && got[labels[i]] == labels[i+1]
			}
			if match {
				return mt.GetCounter().GetValue()
			}
		}
		return 0
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{QueueDepth: 3, DBSize: 4096} {
		fam := fams[name]
		if fam == nil || len(fam.GetMetric()) != 1 || fam.GetMetric()[0].GetGauge().GetValue() != want {
			t.Errorf("%s = %v, want %v", name, fam, want)
		}
	}
	depth = 7
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fams, err = p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := fams[QueueDepth].GetMetric()[0].GetGauge().GetValue(); got != 7 {
		t.Errorf("queue depth after change = %v, want 7", got)
	}
	if got := counter(fams, Investigations, "state", "completed", "agent", "planner"); got != 1 {
		t.Errorf("completed planner = %v", got)
	}
	if got := counter(fams, ToolCalls, "tool", "get_pod_logs", "outcome", "error"); got != 1 {
		t.Errorf("tool errors = %v", got)
	}
	if got := counter(fams, HTTPRequests, "route", "/x", "method", "other"); got != 1 {
		t.Errorf("unknown method not folded into other: %v", got)
	}
	if h := fams[InvestigationDuration]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("%s: %v", InvestigationDuration, h)
	}
	for _, name := range []string{WebhookDeliveries, WebhookRetries, ToolCallDuration, HTTPDuration} {
		if fams[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
}
