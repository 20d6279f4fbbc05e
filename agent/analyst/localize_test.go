package analyst_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// TestLocalizeAcrossServices investigates a real bundle (OpenMetrics on
// disk) where the asked service slows down because another service's CPU
// rose at the same minute, while a third service is still in the tail of
// an earlier, louder episode: the root cause names the second service,
// the earlier one is not first, and the candidates rank the origin.
func TestLocalizeAcrossServices(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at":"`+now.Format(time.RFC3339)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "prometheus"), 0o755); err != nil {
		t.Fatal(err)
	}
	var om strings.Builder
	// 40 minutes of one-minute samples; the symptom begins 3 minutes
	// before now.
	gauge := func(name, labels string, f func(m int) float64) {
		fmt.Fprintf(&om, "# TYPE %s gauge\n", name)
		for m := 0; m <= 40; m++ {
			ts := now.Add(time.Duration(m-40) * time.Minute).Unix()
			fmt.Fprintf(&om, "%s{%s} %g %d\n", name, labels, f(m), ts)
		}
	}
	counter := func(name, labels string, rate func(m int) float64) {
		fmt.Fprintf(&om, "# TYPE %s counter\n", strings.TrimSuffix(name, "_total"))
		v := 0.0
		for m := 0; m <= 40; m++ {
			v += 60 * rate(m)
			ts := now.Add(time.Duration(m-40) * time.Minute).Unix()
			fmt.Fprintf(&om, "%s{%s} %g %d\n", name, labels, v, ts)
		}
	}
	wobble := func(m int) float64 { return math.Sin(float64(m) * 1.7) }
	gauge("service_latency_p90_seconds", `service="frontend"`, func(m int) float64 {
		if m >= 37 {
			return 1.6
		}
		return 0.2 + 0.01*wobble(m)
	})
	counter("container_cpu_usage_seconds_total", `namespace="shop",pod="cart-7d9f8b6c4-x2kq9",container="cart",service="cart"`, func(m int) float64 {
		if m >= 37 {
			return 0.9
		}
		return 0.08 + 0.004*wobble(m)
	})
	counter("container_cpu_usage_seconds_total", `namespace="shop",pod="payment-5c8d7f9b6-p4tz2",container="payment",service="payment"`, func(m int) float64 {
		if m >= 29 {
			return 1.9
		}
		return 0.08 + 0.004*wobble(m)
	})
	counter("container_cpu_usage_seconds_total", `namespace="shop",pod="catalog-6b7c8d9f5-q7w3e",container="catalog",service="catalog"`, func(m int) float64 {
		return 0.05 + 0.002*wobble(m)
	})
	om.WriteString("# EOF\n")
	if err := os.WriteFile(filepath.Join(dir, "prometheus", "metrics.om"), []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sess := investigateDir(t, dir, now)
	desc := res.RootCause.Description
	// The first service the root cause names is cart.
	first, at := "", len(desc)
	for _, s := range []string{"cart", "payment", "catalog", "frontend"} {
		if i := strings.Index(desc, s); i >= 0 && i < at {
			first, at = s, i
		}
	}
	if first != "cart" {
		t.Fatalf("root cause names %q first: %q", first, desc)
	}
	if !strings.Contains(desc, "rose from") {
		t.Errorf("root cause lacks the direction of change: %q", desc)
	}
	if res.Verdict == "healthy" {
		t.Errorf("verdict healthy while frontend's latency rose")
	}
	found := false
	for i, c := range res.Candidates {
		if c.Subject == "cart" {
			found = true
		}
		if c.Subject == "payment" && i == 0 {
			t.Errorf("the earlier episode (payment) ranks first: %+v", res.Candidates)
		}
	}
	if !found {
		t.Errorf("cart missing from the candidates: %+v", res.Candidates)
	}
	if !strings.Contains(strings.Join(sess.ToolsUsed(), ","), "prometheus_query_range") {
		t.Errorf("metrics not read through the tools: %v", sess.ToolsUsed())
	}
}

// investigateOM writes OpenMetrics text into a bundle captured at now and
// asks the analyst why frontend's latency alert fired.
func investigateOM(t *testing.T, now time.Time, om string) *finding.Result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at":"`+now.Format(time.RFC3339)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "prometheus"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus", "metrics.om"), []byte(om+"# EOF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := investigateDir(t, dir, now)
	return res
}

// investigateDir asks the frontend latency question of the bundle in dir
// and returns the answer with the session that served its tools.
func investigateDir(t *testing.T, dir string, now time.Time) (*finding.Result, *tools.Session) {
	t.Helper()
	bun, err := bundle.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat := tools.Builtin()
	toolkit := cat.DefaultToolkit(tools.AgentInvestigation)
	sess := &tools.Session{Catalog: cat, Env: &tools.Env{Sources: bun.Sources(now)}, Toolkit: toolkit}
	res, err := analyst.New(analyst.Options{}).Investigate(context.Background(), &agent.Request{
		Agent:   agent.Agent{Name: tools.AgentInvestigation, Tools: toolkit},
		Message: "frontend latency alert fired: why?",
		Context: map[string]string{"service": "frontend", "namespace": "shop", "time_window": "10m"},
	}, &benchRun{sess: sess})
	if err != nil {
		t.Fatal(err)
	}
	return res, sess
}

// omSeries writes one series of 41 one-minute samples ending at now.
func omSeries(om *strings.Builder, now time.Time, name, labels string, f func(m int) float64) {
	for m := 0; m <= 40; m++ {
		fmt.Fprintf(om, "%s{%s} %g %d\n", name, labels, f(m), now.Add(time.Duration(m-40)*time.Minute).Unix())
	}
}

// step is a level before minute 37 and another from it, with a 1% wobble.
func step(before, after float64) func(int) float64 {
	return func(m int) float64 {
		v := before
		if m >= 37 {
			v = after
		}
		return v + 0.01*v*math.Sin(float64(m)*1.7)
	}
}

// TestLocalizeReadsEveryMetricName: a series listing is capped in label-set
// order, so a system with many pods fills it with its first few names;
// localization pages through the listing and still reads a metric whose
// name sorts after hundreds of other series.
func TestLocalizeReadsEveryMetricName(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var om strings.Builder
	// More label sets than one listing returns, all sorting first.
	om.WriteString("# TYPE aaa_build_info gauge\n")
	for i := 0; i < tools.MaxLabelSets+50; i++ {
		omSeries(&om, now, "aaa_build_info", fmt.Sprintf(`namespace="shop",instance="host-%04d"`, i), func(int) float64 { return 1 })
	}
	om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
	omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
	om.WriteString("# TYPE zz_pod_cpu_usage_rate_percent gauge\n")
	omSeries(&om, now, "zz_pod_cpu_usage_rate_percent", `namespace="shop",pod="cart-7d9f8b6c4-x2kq9",service="cart"`, step(8, 95))
	res := investigateOM(t, now, om.String())
	found := false
	for _, c := range res.Candidates {
		found = found || c.Subject == "cart"
	}
	if !found || !strings.Contains(res.RootCause.Description, "cart") {
		t.Fatalf("cart's CPU, listed after %d other series, was not read: %q %+v", tools.MaxLabelSets+50, res.RootCause.Description, res.Candidates)
	}
}

// TestLocalizeOutweighsGenericSymptoms: a generic saturation finding on a
// service whose CPU fell (nothing localization ranks), or rose by a few
// points (what localization ranks low), does not outrank the service
// localization names, whose own latency rose with the symptom.
func TestLocalizeOutweighsGenericSymptoms(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after float64
	}{
		{"batch CPU fell", 95, 2},
		{"batch CPU rose a few points", 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
			var om strings.Builder
			om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
			omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
			om.WriteString("# TYPE pod_cpu_usage_rate_percent gauge\n")
			omSeries(&om, now, "pod_cpu_usage_rate_percent", `namespace="shop",pod="batch-7d9f8b6c4-x2kq9",service="batch"`, step(tc.before, tc.after))
			om.WriteString("# TYPE pod_server_latency_p90_seconds gauge\n")
			omSeries(&om, now, "pod_server_latency_p90_seconds", `namespace="shop",pod="cart-5c8d7f9b6-p4tz2",service="cart"`, step(0.02, 0.03))
			desc := investigateOM(t, now, om.String()).RootCause.Description
			if i, j := strings.Index(desc, "cart"), strings.Index(desc, "batch"); i < 0 || j >= 0 && j < i {
				t.Fatalf("root cause does not name cart first: %q", desc)
			}
		})
	}
}

// TestLocalizeNamesNextSuspects: the root cause names localization's
// runners-up after its leader, before the consequences at the asked
// service.
func TestLocalizeNamesNextSuspects(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var om strings.Builder
	om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
	omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
	om.WriteString("# TYPE pod_cpu_usage_rate_percent gauge\n")
	omSeries(&om, now, "pod_cpu_usage_rate_percent", `namespace="shop",pod="cart-7d9f8b6c4-x2kq9",service="cart"`, step(8, 95))
	omSeries(&om, now, "pod_cpu_usage_rate_percent", `namespace="shop",pod="email-5c8d7f9b6-p4tz2",service="email"`, step(5, 20))
	desc := investigateOM(t, now, om.String()).RootCause.Description
	i, j, k := strings.Index(desc, "cart"), strings.Index(desc, "next suspects: email"), strings.Index(desc, "(frontend)")
	if i < 0 || j < i || k >= 0 && k < j {
		t.Fatalf("want cart, then the next suspect email, before the consequences: %q", desc)
	}
}

// TestLocalizeNodeRoutineJumps: a node whose CPU jumps from 13% to 35% for
// a couple of minutes every week of minutes does so again with the
// symptom; the saturation detector flags it, localization (which judges
// the node's series against its earlier jumps) does not rank it, and the
// node's saturation weighs half: the service localization names stays the
// root cause, well ahead of the node.
func TestLocalizeNodeRoutineJumps(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var om strings.Builder
	om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
	omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
	om.WriteString("# TYPE node_cpu_usage_rate_percent gauge\n")
	omSeries(&om, now, "node_cpu_usage_rate_percent", `node="node-2"`, func(m int) float64 {
		if m%7 == 3 || m%7 == 4 || m >= 38 {
			return 35 + 0.5*math.Sin(float64(m))
		}
		return 13 + 0.2*math.Sin(float64(m)*1.7)
	})
	om.WriteString("# TYPE pod_server_latency_p90_seconds gauge\n")
	omSeries(&om, now, "pod_server_latency_p90_seconds", `namespace="shop",pod="cart-5c8d7f9b6-p4tz2",service="cart"`, step(0.02, 0.045))
	res := investigateOM(t, now, om.String())
	if desc := res.RootCause.Description; !strings.HasPrefix(desc, "cart") {
		t.Fatalf("root cause does not name cart first: %q", desc)
	}
	var cart, node float64
	for _, c := range res.Candidates {
		switch {
		case c.Subject == "cart" && c.Kind == "localized_fault":
			cart = c.Score
		case c.Subject == "node-2" && c.Kind == "saturation":
			node = c.Score
		}
	}
	if cart == 0 || node >= cart/2 {
		t.Errorf("node-2's saturation scores %v, cart %v: want the node below half of cart", node, cart)
	}
}

// TestLocalizeEarlierEntryEpisode: the asked service's latency rose once
// with an earlier fault, settled, and rose again with the current one, when
// another service's own latency began to rise by a little. The asked
// service's latency finding, dated from the earlier episode and louder, is
// that episode's tail and no longer outranks the service where the current
// episode began. When the asked service's slowdown is one episode that
// began before the other service moved, that service is not its origin.
func TestLocalizeEarlierEntryEpisode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entry    func(m int) float64 // frontend's latency p90 at minute m (the window starts at 30)
		wantCart bool
	}{
		{"earlier episode inside the window", func(m int) float64 {
			if m >= 31 && m <= 33 {
				return 3.2
			}
			return step(0.2, 0.5)(m)
		}, true},
		{"earlier episode from before the window", func(m int) float64 {
			if m >= 26 && m <= 33 {
				return 3.2
			}
			return step(0.2, 0.5)(m)
		}, true},
		{"one episode, begun before the other service moved", func(m int) float64 {
			if m >= 31 {
				return 0.5
			}
			return step(0.2, 0.2)(m)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCartNamedFirst(t, tc.entry, tc.wantCart) })
	}
}

// TestLocalizeQuietSubject: a caller's fault does not explain its
// callee. gateway calls frontend, frontend calls cart (mesh request
// counters give the edges). When gateway's latency jumps while
// frontend's own latency stays flat, frontend (the asked service) looks
// healthy and gateway's fault is a failure nearby; when cart, which
// frontend calls, slows with frontend, cart is the root cause.
func TestLocalizeQuietSubject(t *testing.T) {
	for _, tc := range []struct {
		name        string
		entry, gw   func(m int) float64 // frontend's and gateway's latency p90
		cart        func(m int) float64 // cart's latency p90
		want        string              // the service the root cause names
		wantHealthy bool
	}{
		{"caller faulted, asked service still", step(0.2, 0.2), step(0.05, 0.5), step(0.02, 0.02), "gateway", true},
		{"callee faulted, asked service slowed", step(0.2, 1.6), step(0.05, 0.05), step(0.02, 0.2), "cart", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
			var om strings.Builder
			om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
			omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, tc.entry)
			om.WriteString("# TYPE pod_server_latency_p90_seconds gauge\n")
			omSeries(&om, now, "pod_server_latency_p90_seconds", `namespace="shop",pod="cart-5c8d7f9b6-p4tz2",service="cart"`, tc.cart)
			omSeries(&om, now, "pod_server_latency_p90_seconds", `namespace="shop",pod="gateway-7d9f8b6c4-x2kq9",service="gateway"`, tc.gw)
			om.WriteString("# TYPE istio_requests counter\n")
			for _, e := range [][2]string{{"gateway", "frontend"}, {"frontend", "cart"}} {
				omSeries(&om, now, "istio_requests_total", `namespace="shop",source_workload="`+e[0]+`",destination_workload="`+e[1]+`"`, func(m int) float64 { return float64(600 * m) })
			}
			res := investigateOM(t, now, om.String())
			desc := res.RootCause.Description
			if healthy := res.Verdict == finding.VerdictHealthy; healthy != tc.wantHealthy {
				t.Fatalf("verdict %s, want healthy %v: %q", res.Verdict, tc.wantHealthy, desc)
			}
			if !strings.Contains(desc, tc.want) {
				t.Errorf("root cause does not name %s: %q", tc.want, desc)
			}
			if tc.wantHealthy && !strings.Contains(desc, "nearby") {
				t.Errorf("%s's fault is not listed as a failure nearby: %q", tc.want, desc)
			}
		})
	}
}

// TestLocalizeEntryBlip: the asked service's latency percentile jumps for
// one minute and is back the next (a few slow requests), while another
// service's latency rises and holds from the same minute. Localization,
// which judged the asked service's own series against their noise, found
// no deviation that held there: the latency finding of the asked service
// weighs half and the service whose own latency changed is named first.
// A slowdown of the asked service that holds still leads when the other
// service's rise is small.
func TestLocalizeEntryBlip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entry    func(m int) float64 // frontend's latency p90
		wantCart bool
	}{
		{"one-minute jump of the asked service", func(m int) float64 {
			if m == 38 {
				return 2.4
			}
			return step(0.2, 0.2)(m)
		}, true},
		{"a slowdown of the asked service that holds", step(0.2, 2.4), false},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCartNamedFirst(t, tc.entry, tc.wantCart) })
	}
}

// TestLocalizeReadsHistograms: services that expose their latency only as
// histograms (OpenTelemetry's http.server.request.duration, Micrometer's
// http_server_requests_seconds tagged with the application) are read
// through their _sum over their _count (the mean per request) and their
// 5xx _count (errors): cart, whose requests begin to fail and slow down
// with the symptom, is localized, ahead of catalog, which did not change.
func TestLocalizeReadsHistograms(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var om strings.Builder
	// counter writes a cumulative series from a per-second rate.
	counter := func(name, labels string, rate func(m int) float64) {
		v := 0.0
		omSeries(&om, now, name, labels, func(m int) float64 { v += 60 * rate(m); return v })
	}
	flat := func(r float64) func(int) float64 { return func(int) float64 { return r } }
	after := func(r float64) func(int) float64 {
		return func(m int) float64 {
			if m >= 37 {
				return r
			}
			return 0
		}
	}
	om.WriteString("# TYPE http_server_request_duration_seconds histogram\n")
	fe := `namespace="shop",service="frontend",http_route="/",http_response_status_code=`
	counter("http_server_request_duration_seconds_count", fe+`"200"`, flat(20))
	counter("http_server_request_duration_seconds_sum", fe+`"200"`, func(m int) float64 { return 20 * step(0.08, 0.9)(m) })
	counter("http_server_request_duration_seconds_count", fe+`"500"`, after(4))
	counter("http_server_request_duration_seconds_sum", fe+`"500"`, after(4*0.9))
	ca := `namespace="shop",service="catalog",http_route="/items",http_response_status_code="200"`
	counter("http_server_request_duration_seconds_count", ca, flat(15))
	counter("http_server_request_duration_seconds_sum", ca, func(m int) float64 { return 15 * step(0.01, 0.01)(m) })
	om.WriteString("# TYPE http_server_requests_seconds summary\n")
	cart := `application="cart",namespace="shop",method="GET",uri="/cart",status=`
	counter("http_server_requests_seconds_count", cart+`"200"`, flat(20))
	counter("http_server_requests_seconds_sum", cart+`"200"`, func(m int) float64 { return 20 * step(0.02, 0.7)(m) })
	counter("http_server_requests_seconds_count", cart+`"500"`, after(4))
	counter("http_server_requests_seconds_sum", cart+`"500"`, after(4*0.7))
	res := investigateOM(t, now, om.String())
	for _, c := range res.Candidates {
		if c.Kind != string(analyst.KindLocalized) {
			continue
		}
		if c.Subject != "cart" {
			t.Fatalf("first localized candidate is %s, want cart: %+v", c.Subject, res.Candidates)
		}
		if !strings.Contains(c.Evidence, "(mean)") && !strings.Contains(c.Evidence, "(500)") {
			t.Errorf("cart's candidate does not say which histogram moved: %q", c.Evidence)
		}
		return
	}
	t.Fatalf("no localized candidate (cart's histograms unread): %q %+v", res.RootCause.Description, res.Candidates)
}

// TestLocalizeReadsServiceLogFiles: a bundle's log file named after a
// service the metrics know (logs/cart.log) is that service's log for
// localization: cart, whose metrics stay flat while its log begins to
// repeat a new error with the symptom, is localized; a file named after
// nothing the metrics or traces know is not read as a service.
func TestLocalizeReadsServiceLogFiles(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	for _, d := range []string{"prometheus", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at":"`+now.Format(time.RFC3339)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var om strings.Builder
	om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
	omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
	om.WriteString("# TYPE pod_cpu_usage_rate_percent gauge\n")
	omSeries(&om, now, "pod_cpu_usage_rate_percent", `namespace="shop",pod="cart-7d9f8b6c4-x2kq9",service="cart"`, step(20, 20))
	om.WriteString("# EOF\n")
	if err := os.WriteFile(filepath.Join(dir, "prometheus", "metrics.om"), []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var cart, other strings.Builder
	for m := 0; m <= 40; m++ {
		at := now.Add(time.Duration(m-40) * time.Minute)
		for i := 0; i < 10; i++ {
			ts := at.Add(time.Duration(i) * 5 * time.Second).Format(time.RFC3339Nano)
			fmt.Fprintf(&cart, "%s INFO cart served basket %d items=%d\n", ts, m*10+i, i%4)
			fmt.Fprintf(&other, "%s INFO audit record %d stored\n", ts, m*10+i)
			if m >= 37 {
				fmt.Fprintf(&cart, "%s INFO cart refused basket %d: stock reservation rejected for sku %d\n", ts, m*10+i, 7000+i)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "cart.log"), []byte(cart.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "audit-trail.log"), []byte(other.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := investigateDir(t, dir, now)
	found := false
	for _, c := range res.Candidates {
		if c.Kind != string(analyst.KindLocalized) {
			continue
		}
		if c.Subject == "audit-trail" {
			t.Errorf("a log file named after no known service was localized: %+v", c)
		}
		found = found || c.Subject == "cart" && strings.Contains(c.Evidence, "template")
	}
	if !found {
		t.Fatalf("cart's log file was not read for localization: %+v", res.Candidates)
	}
}

// TestLocalizeNodeExporterInstance: node_exporter's series and recording
// rules over them name their node by the instance label (job is the
// exporter, not a service): the node whose CPU saturates with the symptom
// is a node candidate, named without the exporter's port.
func TestLocalizeNodeExporterInstance(t *testing.T) {
	for _, tc := range []struct{ name, metric, instance, want string }{
		{"recording rule, host name", "instance:node_cpu_utilisation:rate5m", "ip-10-40-3-112.eu-west-1.compute.internal", "ip-10-40-3-112.eu-west-1.compute.internal"},
		{"exporter gauge, address and port", "node_cpu_busy_ratio", "10.40.3.112:9100", "10.40.3.112"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
			var om strings.Builder
			om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
			omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, step(0.2, 1.6))
			fmt.Fprintf(&om, "# TYPE %s gauge\n", tc.metric)
			omSeries(&om, now, tc.metric, fmt.Sprintf(`instance=%q,job="node-exporter"`, tc.instance), step(0.3, 0.98))
			res := investigateOM(t, now, om.String())
			for _, c := range res.Candidates {
				if c.Kind == string(analyst.KindLocalized) && c.Subject == tc.want {
					return
				}
				if c.Kind == string(analyst.KindLocalized) && c.Subject == "node-exporter" {
					t.Fatalf("the exporter's job was localized as a service: %+v", res.Candidates)
				}
			}
			t.Fatalf("node %s not localized: %+v", tc.want, res.Candidates)
		})
	}
}

// checkCartNamedFirst investigates frontend's latency p90 entry (per
// minute) beside cart's small rise in its own p90, and checks whether the
// root cause names cart before frontend.
func checkCartNamedFirst(t *testing.T, entry func(int) float64, wantCart bool) {
	t.Helper()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var om strings.Builder
	om.WriteString("# TYPE service_latency_p90_seconds gauge\n")
	omSeries(&om, now, "service_latency_p90_seconds", `service="frontend"`, entry)
	om.WriteString("# TYPE pod_server_latency_p90_seconds gauge\n")
	omSeries(&om, now, "pod_server_latency_p90_seconds", `namespace="shop",pod="cart-5c8d7f9b6-p4tz2",service="cart"`, step(0.02, 0.027))
	res := investigateOM(t, now, om.String())
	desc := res.RootCause.Description
	i, j := strings.Index(desc, "cart"), strings.Index(desc, "frontend")
	if cart := i >= 0 && (j < 0 || i < j); cart != wantCart {
		t.Fatalf("root cause names cart first: %v, want %v: %q %+v", cart, wantCart, desc, res.Candidates)
	}
}
