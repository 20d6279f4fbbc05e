package prom_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/prom"
	"github.com/rootcause/rootcause/outbound"
)

// startPrometheus serves the test bundle's OpenMetrics from the real
// prometheus binary on a loopback port.
func startPrometheus(t *testing.T) string {
	t.Helper()
	return evidencetest.StartPrometheus(t, filepath.Join(evidencetest.ShopBundleDir(), "prometheus", "metrics.om"))
}

func at(hms string) time.Time {
	t, _ := time.Parse(time.RFC3339, "2026-03-14T"+hms+"Z")
	return t
}

func TestLivePrometheusMatchesBundle(t *testing.T) {
	url := startPrometheus(t)
	live, err := prom.New(prom.Config{URL: url, Headers: map[string]string{"X-Test": "1"}, Timeout: 10 * time.Second, Guard: loopback})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.OpenDir(evidencetest.ShopBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	bm := b.Sources(b.CapturedAt).Metrics
	// Evaluation times sit between samples (:30) so that the left-closed
	// windows of Prometheus 2 and the left-open ones of Prometheus 3 (and of
	// the bundle) select the same samples.
	var qs []evidencetest.MetricQuery
	for _, ts := range []string{"09:30:30", "10:18:30", "10:39:30"} {
		for _, e := range []string{
			`http_requests_total{service="checkout"}`,
			`http_requests_total{code!="200", service=~"check.*"}`,
			`rate(http_requests_total[5m])`,
			`increase(http_requests_total{service="checkout"}[10m])`,
			`irate(http_requests_total[5m])`,
			`sum by (service) (rate(http_requests_total[5m]))`,
			`histogram_quantile(0.95, sum by (le, service) (rate(http_request_duration_seconds_bucket[5m])))`,
			`sum(rate(http_requests_total{code="500"}[5m])) by (service) / sum(rate(http_requests_total[5m])) by (service)`,
			`max_over_time(container_memory_working_set_bytes[30m]) / 1024 / 1024`,
			`avg without (code) (delta(http_requests_total[15m]))`,
			`rate(http_requests_total[5m]) > 10`,
			`topk(2, rate(http_requests_total[5m]))`,
		} {
			qs = append(qs, evidencetest.MetricQuery{Expr: e, At: at(ts)})
		}
	}
	qs = append(qs,
		evidencetest.MetricQuery{Expr: `sum by (service) (rate(http_requests_total[5m]))`, Start: at("09:00:30"), End: at("10:40:30"), Step: 5 * time.Minute},
		evidencetest.MetricQuery{Expr: `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="checkout"}[5m])))`, Start: at("09:50:30"), End: at("10:30:30"), Step: time.Minute},
		evidencetest.MetricQuery{Expr: `container_memory_working_set_bytes`, Start: at("10:30:10"), End: at("10:50:10"), Step: 90 * time.Second},
	)
	evidencetest.CompareMetrics(t, bm, live, qs, 1e-9)

	ctx := context.Background()
	for _, match := range []string{`http_requests_total`, `{__name__=~"http_request_duration_seconds_.*", service="cart"}`, ``} {
		a, err1 := bm.SeriesSet(ctx, match, at("08:00:00"), at("11:00:00"))
		c, err2 := live.SeriesSet(ctx, match, at("08:00:00"), at("11:00:00"))
		if err1 != nil || err2 != nil || fmt.Sprint(a) != fmt.Sprint(c) {
			t.Errorf("SeriesSet(%q): bundle %v %v, live %v %v", match, a, err1, c, err2)
		}
	}
	if _, err := live.Query(ctx, `sum(`, at("09:30:00")); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("bad query on live: %v, want invalid", err)
	}
}

// loopback lets the tests reach their own servers on 127.0.0.1.
var loopback = outbound.New(outbound.MustAllowlist("127.0.0.1"))

func TestLivePrometheusUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c, err := prom.New(prom.Config{URL: "http://" + addr, Timeout: 2 * time.Second, Guard: loopback})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Now())
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "prometheus" {
		t.Errorf("unreachable: %v, want prometheus unavailable", err)
	}
	if _, err := prom.New(prom.Config{URL: "ftp://x"}); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("bad url: %v", err)
	}
}

// An address that answers with something other than the Prometheus API
// gets a data gap that does not quote the answer.
func TestLivePrometheusDoesNotQuoteForeignAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("SSH-2.0-OpenSSH_9.6 secret banner"))
	}))
	defer srv.Close()
	c, err := prom.New(prom.Config{URL: srv.URL, Timeout: 2 * time.Second, Guard: loopback})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Now())
	if err == nil || strings.Contains(err.Error(), "SSH") || strings.Contains(err.Error(), "banner") {
		t.Fatalf("foreign answer: %v", err)
	}
}

// A Prometheus (or proxy) error that quotes the request's credentials
// reaches no caller with them.
func TestLivePrometheusScrubsHeaderSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"refused %s"}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	c, err := prom.New(prom.Config{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer prom-secret-123"}, Timeout: 2 * time.Second, Guard: loopback})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(context.Background(), "up", time.Now())
	if err == nil || strings.Contains(err.Error(), "prom-secret-123") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("error %v: want the secret redacted", err)
	}
}
