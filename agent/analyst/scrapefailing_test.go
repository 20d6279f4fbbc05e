package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestScrapeLines(t *testing.T) {
	for _, c := range []struct {
		line   string
		is404  bool
		listen string
	}{
		{`2026-12-08T16:02:46.127Z  WARN 1 --- [inventory-service] [nio-8080-exec-5] o.s.web.servlet.PageNotFound                  : No mapping for GET /metrics`, true, ""},
		{`10.8.3.4 - - [08/Dec/2026:16:02:46 +0000] "GET /metrics HTTP/1.1" 404 19 "-" "Prometheus/2.53.0"`, true, ""},
		{`2026-12-08T16:02:46Z WARN No endpoint GET /actuator/prometheus.`, true, ""},
		{`2026-12-08T15:59:25.356Z  INFO 1 --- [inventory-service] [main] i.o.e.prometheus.PrometheusHttpServer : Prometheus metrics exporter listening on http://0.0.0.0:9464/metrics`, false, "9464"},
		{`level=info msg="metrics server listening on :9102"`, false, "9102"},
		{`10.8.3.4 - - [08/Dec/2026:16:02:46 +0000] "GET /metrics HTTP/1.1" 200 5120 "-" "Prometheus/2.53.0"`, false, ""},
		{`2026-12-08T16:02:46Z WARN o.s.web.servlet.PageNotFound : No mapping for GET /api/v2/stock`, false, ""},
	} {
		listen := ""
		if m := metricsListenRE.FindStringSubmatch(c.line); m != nil {
			listen = m[1]
		}
		if metricsPath404RE.MatchString(c.line) != c.is404 || listen != c.listen {
			t.Errorf("%q: 404 %v listen %q", c.line, metricsPath404RE.MatchString(c.line), listen)
		}
	}
}

// TestDetectScrapeFailing reads a target down whose service answers the
// scrape with 404 and serves on; a target down whose service stopped
// logging is no false alarm.
func TestDetectScrapeFailing(t *testing.T) {
	down := Finding{Kind: KindTargetDown, Subject: "inventory-service", Time: win.Start.Add(5 * time.Minute), Evidence: []string{"scrape target (up) of inventory-service fell from 1 to 0"}}
	served := `2026-12-08T16:20:00.670Z  INFO 1 --- [inventory-service] [nio-8080-exec-19] c.a.w.inventory.StockController : reserve sku=SKU-183174 qty=5 warehouse=WAW1 result=RESERVED`
	scraped := `2026-12-08T16:02:46.127Z  WARN 1 --- [inventory-service] [nio-8080-exec-5] o.s.web.servlet.PageNotFound : No mapping for GET /metrics`
	listen := `2026-12-08T15:59:25.356Z  INFO 1 --- [inventory-service] [main] i.o.e.prometheus.PrometheusHttpServer : Prometheus metrics exporter listening on http://0.0.0.0:9464/metrics`
	lines := func(n int, l string) []string { return strings.Split(strings.Repeat(l+"\n", n), "\n")[:n] }
	for _, c := range []struct {
		name string
		set  LogSet
		want bool
	}{
		{"scrape answered 404, requests served for the rest of the window", minedSet("inventory-service", true, 0, append(append([]string{listen}, scraped), lines(340, served)...)...), true},
		{"no word of the scrape", minedSet("inventory-service", true, 0, lines(340, served)...), false},
		{"the service stopped logging with its target", minedSet("inventory-service", true, 0, listen, scraped, served), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectScrapeFailing(&Gathered{Logs: []LogSet{c.set}, Window: win}, []Finding{down})
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			h := &Hypothesis{Kind: KindScrapeFailing, Subject: "inventory-service", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "is not down", "404", "port 9464", "keeps serving")
		})
	}
}

// TestScrapeSampleLimit reads Prometheus rejecting a target's scrape over
// its sample limit, in the forms Prometheus prints it (logfmt of 2.x, slog
// of 3.x, the targets API's lastError), for the subject's pool only.
func TestScrapeSampleLimit(t *testing.T) {
	down := Finding{Kind: KindTargetDown, Subject: "catalog-api", Time: win.Start.Add(5 * time.Minute), Evidence: []string{"scrape target (up) of catalog-api fell from 1 to 0"}}
	served := `{"time":"2026-12-08T16:20:00.136Z","level":"INFO","msg":"request","method":"GET","path":"/v2/products/42","status":200,"duration_ms":30.2}`
	lines := func(n int, l string) []string { return strings.Split(strings.Repeat(l+"\n", n), "\n")[:n] }
	sm := evidence.CommandOutput{Command: "kubectl -n catalog get servicemonitor catalog-api -o yaml", Run: "kubectl -n catalog get servicemonitor catalog-api -o yaml",
		Lines: []string{"kind: ServiceMonitor", "  name: catalog-api", "spec:", "  sampleLimit: 10000"}}
	for _, c := range []struct {
		name  string
		prom  string
		cmd   *evidence.CommandOutput
		want  bool
		limit string
	}{
		{"logfmt of Prometheus 2", `ts=2026-12-08T16:05:25.684Z caller=scrape.go:1544 level=warn component="scrape manager" scrape_pool=serviceMonitor/catalog/catalog-api/0 target=http://10.42.6.14:8080/metrics msg="Append failed" err="sample limit exceeded"`, &sm, true, "10000"},
		{"slog of Prometheus 3", `time=2026-12-08T16:05:25.684Z level=WARN source=scrape.go:1615 msg="Append failed" component="scrape manager" scrape_pool=catalog-api target=http://10.42.6.14:8080/metrics err="sample limit exceeded"`, nil, true, ""},
		{"targets API lastError", "", &evidence.CommandOutput{Run: "wget -qO- 'http://localhost:9090/api/v1/targets?scrapePool=podMonitor/catalog/catalog-api/0'",
			Lines: []string{`{"status":"success","data":{"activeTargets":[{"scrapePool":"podMonitor/catalog/catalog-api/0","health":"down","lastError":"sample limit exceeded","lastScrape":"2026-12-08T16:05:25Z"}]}}`}}, true, ""},
		{"another pool over its limit", `ts=2026-12-08T16:05:25.684Z caller=scrape.go:1544 level=warn component="scrape manager" scrape_pool=serviceMonitor/search/search-api/0 target=http://10.42.6.19:8080/metrics msg="Append failed" err="sample limit exceeded"`, &sm, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("catalog-api", true, 0, lines(340, served)...)}, Window: win}
			if c.prom != "" {
				ev.Logs = append(ev.Logs, minedSet("prometheus", true, 0, lines(20, c.prom)...))
			}
			if c.cmd != nil {
				ev.Commands = []evidence.CommandOutput{*c.cmd}
			}
			fs := detectScrapeFailing(ev, []Finding{down})
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			if fs[0].fact("sample_limit") != c.limit {
				t.Errorf("limit %q, want %q", fs[0].fact("sample_limit"), c.limit)
			}
			h := &Hypothesis{Kind: KindScrapeFailing, Subject: "catalog-api", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "is not down", "sample limit", "series", "keeps serving")
		})
	}
}
