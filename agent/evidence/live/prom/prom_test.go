package prom_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/prom"
	"github.com/rootcause/rootcause/outbound"
)

// startPrometheus backfills the test bundle's OpenMetrics into a TSDB with
// promtool and starts the real prometheus binary on a loopback port.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin, err1 := exec.LookPath("prometheus")
	tool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("prometheus/promtool not installed (CI=%s): .ci/run must apt-get install -y --no-install-recommends prometheus", os.Getenv("CI"))
		}
		t.Skip("prometheus and promtool are not installed (apt-get install -y --no-install-recommends prometheus); set CI to make this a failure")
	}
	dir := t.TempDir()
	tsdb := filepath.Join(dir, "tsdb")
	om := filepath.Join(evidencetest.ShopBundleDir(), "prometheus", "metrics.om")
	if out, err := exec.Command(tool, "tsdb", "create-blocks-from", "openmetrics", om, tsdb).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\nscrape_configs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+tsdb, "--storage.tsdb.retention.time=100y",
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
