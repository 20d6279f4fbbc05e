package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPoolHeld: a service's own connection pool with no free connection
// (HikariCP, Tomcat JDBC, SQLAlchemy, Npgsql; or its gauges at their
// maximum with requests waiting) while one caller's calls into it run for
// minutes is held by that caller: named from the service's request log
// (client= with a duration), else from the caller's log of its calls to
// the service's host, else (no direct evidence: weaker, no "why") from a
// change to a caller that names the service. A pool that runs out with
// no long calls, or long calls with the pool free, are not it.
func TestPoolHeld(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	hikari := `2026-05-01T11:40:31.998Z ERROR 1 --- [inventory-api] [io-8080-exec-41] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 3000ms (total=10, active=10, idle=0, waiting=37)`
	export := `2026-05-01T11:40:40.871Z  INFO 1 --- [inventory-api] [nio-8080-exec-9] c.s.inventory.web.StockExportController  : GET /v1/stock/export client=marketplace-sync format=ndjson finished rows=1912044 took=214230ms`
	quick := `2026-05-01T11:40:40.871Z  INFO 1 --- [inventory-api] [nio-8080-exec-9] c.s.inventory.web.ReservationController : POST /v1/reservations client=checkout-api took=18ms`
	tomcat := `2026-05-01 11:41:02,114 WARN [http-nio-8080-exec-12] o.a.t.j.p.ConnectionPool - Unable to get connection: org.apache.tomcat.jdbc.pool.PoolExhaustedException: [http-nio-8080-exec-12] Timeout: Pool empty. Unable to fetch a connection in 30 seconds, none available[size:50; busy:50; idle:0; lastwait:30000].`
	reportCall := `{"ts":"2026-05-01T11:30:00.000Z","level":"info","msg":"fetching ledger","url":"http://ledger-api.finance.svc.cluster.local:8080/internal/ledger/dump?from=2020-01-01"}`
	reportDone := `{"ts":"2026-05-01T11:35:12.500Z","level":"info","msg":"ledger dump done in 312.5s","rows":8120033}`
	sqla := `2026-05-01 11:42:10,002 ERROR [catalog.db] sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00 (Background on this error at: https://sqlalche.me/e/20/3o7r)`
	npgsql := `2026-05-01T11:42:10.002Z fail: Pricing.Api[0] Npgsql.NpgsqlException (0x80004005): The connection pool has been exhausted, either raise 'Max Pool Size' (currently 100) or 'Timeout' (currently 15 seconds) in your connection string.`
	bulk := `2026-05-01T11:41:00.000Z info: Pricing.Api[0] POST /api/prices/bulk caller=price-importer status=200 elapsed_ms=95000`
	logs := func(subject string, lines ...string) LogSet {
		set := LogSet{Source: subject + "-7c5d9b6f8-fx8kl", Subject: subject, Namespace: "shop", Origin: SrcLogs, HasBaseline: true}
		for _, l := range lines {
			set.Templates = append(set.Templates, tmpl(l, 20, on, w.End))
		}
		return set
	}
	gauge := func(name string, v func(time.Time) float64) MetricSet {
		return MetricSet{Name: name, Class: MetricSaturation, Series: []evidence.Series{wseries(w, evidence.Labels{"service": "inventory-api", "pod": "inventory-api-1", "pool": "HikariPool-1"}, v)}}
	}
	step := stepAt(on)
	firstRollout := evidence.Change{Timestamp: on.Add(-5 * time.Minute), Service: "catalog-sync", Kind: "deploy", Description: "catalog-sync 1.0.0: nightly full export from catalog-api /internal/export every 10 minutes"}
	cases := []struct {
		name                   string
		logs                   []LogSet
		metrics                []MetricSet
		changes                []evidence.Change
		subject, holder, calls string
		size, pool             string
		direct                 bool
	}{
		{"HikariCP and the service's request log", []LogSet{logs("inventory-api", hikari, export, quick)}, nil, nil,
			"inventory-api", "marketplace-sync", "GET /v1/stock/export", "10", "HikariPool-1", true},
		{"Tomcat JDBC and the caller's log of its calls", []LogSet{logs("ledger-api", tomcat), logs("month-end-report", reportCall, reportDone)}, nil, nil,
			"ledger-api", "month-end-report", "calls", "50", "", true},
		{"Npgsql and a JSON-less request line with elapsed_ms", []LogSet{logs("pricing-api", npgsql, bulk)}, nil, nil,
			"pricing-api", "price-importer", "POST /api/prices/bulk", "100", "", true},
		{"SQLAlchemy and a change naming the service", []LogSet{logs("catalog-api", sqla)}, nil, []evidence.Change{firstRollout},
			"catalog-api", "catalog-sync", "/internal/export calls", "15", "", false},
		{"HikariCP gauges at their maximum with waiting requests", []LogSet{logs("inventory-api", export)},
			[]MetricSet{gauge("hikaricp_connections_active", step(2, 10)), gauge("hikaricp_connections_max", step(10, 10)), gauge("hikaricp_connections_pending", step(0, 30))}, nil,
			"inventory-api", "marketplace-sync", "GET /v1/stock/export", "10", "HikariPool-1", true},
		{"a pool that runs out with no long calls", []LogSet{logs("inventory-api", hikari, quick)}, nil, nil, "", "", "", "", "", false},
		{"long calls with the pool free", []LogSet{logs("inventory-api", export, quick)},
			[]MetricSet{gauge("hikaricp_connections_active", step(2, 3)), gauge("hikaricp_connections_max", step(10, 10))}, nil, "", "", "", "", "", false},
		{"a pool at its maximum in the baseline already", []LogSet{logs("inventory-api", export)},
			[]MetricSet{gauge("hikaricp_connections_active", step(10, 10)), gauge("hikaricp_connections_max", step(10, 10)), gauge("hikaricp_connections_pending", step(3, 3))}, nil, "", "", "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectPoolHeld(&Gathered{Logs: c.logs, Metrics: c.metrics, Changes: c.changes, Window: w}, nil)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("holder") != c.holder || f.fact("calls") != c.calls && callsWord(f.fact("calls")) != c.calls || f.fact("pool_size") != c.size || f.fact("pool") != c.pool {
				t.Errorf("subject %q holder %q calls %q size %q pool %q", f.Subject, f.fact("holder"), f.fact("calls"), f.fact("pool_size"), f.fact("pool"))
			}
			if (f.fact("why") != "") != c.direct || c.direct != (f.Weight >= 0.9) {
				t.Errorf("direct %v: why %q weight %.2f", c.direct, f.fact("why"), f.Weight)
			}
			h := &Hypothesis{Kind: KindPoolHeld, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := poolHeld.describe(h, Scope{})
			for _, want := range []string{"connection pool", "of " + c.subject, "held by " + c.holder} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
			if c.size != "" && !strings.Contains(d, "("+c.size+" connections per pod)") {
				t.Errorf("description lacks the pool's size: %s", d)
			}
			r := &recommender{h: h}
			poolHeld.recommend(h, Scope{}, r)
			if len(r.recs) == 0 || !strings.Contains(r.recs[0].Action, c.holder) {
				t.Errorf("first action names no holder: %+v", r.recs)
			}
		})
	}
}

// TestCallDuration: the durations request lines state, in their units.
func TestCallDuration(t *testing.T) {
	for line, want := range map[string]time.Duration{
		"GET /x client=a took=214230ms":           214230 * time.Millisecond,
		`{"msg":"done","elapsed_ms":95000}`:       95 * time.Second,
		"ledger dump done in 312.5s":              312500 * time.Millisecond,
		`"request_time": 0.041`:                   41 * time.Millisecond,
		"feed cycle 18 finished: 1912 rows in 2m": 2 * time.Minute,
		"responseTime=3044":                       3044 * time.Millisecond,
		"no duration here":                        0,
	} {
		if got := callDuration(line); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}

// TestPoolMetricsNotLoad: a client's pool of database connections in use
// is held, not load: it is no load surge, and its maximum is no shift.
func TestPoolMetricsNotLoad(t *testing.T) {
	for _, n := range []string{"hikaricp_connections_active", "hikaricp_connections_pending", "db_client_connections_usage"} {
		if IsLoadMetric(n) {
			t.Errorf("%s reads as load", n)
		}
	}
	if !IsLoadMetric("nginx_connections_active") {
		t.Error("a server's active connections no longer read as load")
	}
	if c, _ := ClassifyMetric("hikaricp_connections_max"); c != MetricState {
		t.Errorf("hikaricp_connections_max: class %q", c)
	}
}
