package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// testWindow is a one-hour incident window after a one-hour baseline.
func testWindow() Window {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	return Window{BaselineStart: t0, Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}
}

// series samples f every 30 s over baseline and window.
func wseries(w Window, l evidence.Labels, f func(t time.Time) float64) evidence.Series {
	s := evidence.Series{Labels: l}
	for t := w.BaselineStart; !t.After(w.End); t = t.Add(30 * time.Second) {
		s.Points = append(s.Points, evidence.Point{T: t, V: f(t)})
	}
	return s
}

func TestClassifyStateMetrics(t *testing.T) {
	tests := map[string]string{
		"kube_job_status_active":                   MetricState,
		"kube_cronjob_status_active":               MetricState,
		"kube_deployment_status_replicas":          MetricState,
		"kube_pod_status_phase":                    MetricState,
		"kube_pod_container_status_restarts_total": MetricRestarts,
		"redis_evicted_keys_total":                 MetricCache,
		"redis_memory_max_bytes":                   MetricCache,
		"container_memory_working_set_bytes":       MetricSaturation,
	}
	for name, want := range tests {
		if got, _ := ClassifyMetric(name); got != want {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", name, got, want)
		}
	}
	if got := SubjectOfLabels(evidence.Labels{"cronjob": "invoice-export", "namespace": "billing"}); got != "invoice-export" {
		t.Errorf("cronjob subject = %q", got)
	}
	if got := SubjectOfLabels(evidence.Labels{"job_name": "catalog-import-29700970"}); got != "catalog-import" {
		t.Errorf("job subject = %q", got)
	}
}

func TestDetectJobOverlapJoinsPoolExhaustion(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(20 * time.Minute)
	active := wseries(w, evidence.Labels{"cronjob": "invoice-export", "namespace": "billing"}, func(t time.Time) float64 {
		switch {
		case t.Before(w.Start):
			return 0
		case t.Before(onset):
			return 1
		}
		return 4
	})
	sets := []MetricSet{{Name: "kube_cronjob_status_active", Class: MetricState, Series: []evidence.Series{active}}}
	fs := DetectJobOverlap(sets, w)
	if len(fs) != 1 || fs[0].Subject != "invoice-export" || fs[0].fact("active_peak") != "4" {
		t.Fatalf("overlap findings: %+v", fs)
	}
	// One run at a time is normal: no finding.
	single := wseries(w, evidence.Labels{"job_name": "catalog-import-29700970"}, func(time.Time) float64 { return 1 })
	if got := DetectJobOverlap([]MetricSet{{Name: "kube_job_status_active", Class: MetricState, Series: []evidence.Series{single}}}, w); len(got) != 0 {
		t.Errorf("a single active Job is not an overlap: %+v", got)
	}
	db := Finding{Kind: KindDatabase, Subject: "postgresql", Time: onset.Add(5 * time.Minute), Weight: 0.9, Source: SrcLogs, Related: []string{"billing-api"},
		Facts: map[string]string{"line": "error query failed err=ERROR: query_wait_timeout (SQLSTATE 08P01)", "caller": "billing-api", "lines": "50"}}
	change := Finding{Kind: KindConfigChange, Subject: "invoice-export", Time: w.Start.Add(5 * time.Minute), Weight: 1, Source: SrcChanges,
		Summary: "config change of invoice-export", Facts: map[string]string{"description": `CronJob invoice-export schedule "0 * * * *" -> "*/10 * * * *"`}}
	a := Reason([]Finding{db, fs[0], change}, Scope{Service: "billing-api", Window: w})
	h := a.Hypotheses[0]
	d := describe(h, Scope{})
	if h.Kind != KindDatabase || h.Trigger == nil || h.Trigger.Subject != "invoice-export" {
		t.Fatalf("want the pool exhaustion triggered by the CronJob change, got %s (trigger %v)", h.Kind, h.Trigger)
	}
	for _, want := range []string{"pool", "query_wait_timeout", "CronJob invoice-export", "*/10"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
}

func TestLoadSurgeNamesOOMTrigger(t *testing.T) {
	w := testWindow()
	surge := w.Start.Add(10 * time.Minute)
	conns := wseries(w, evidence.Labels{"pod": "presence-gateway-6c9d7f5b8k-4wrnm", "namespace": "rt"}, func(t time.Time) float64 {
		if t.Before(surge) {
			return 3000
		}
		return 13500
	})
	flat := wseries(w, evidence.Labels{"service": "search"}, func(time.Time) float64 { return 100 })
	sets := []MetricSet{
		{Name: "presence_ws_connections_active", Class: MetricSaturation, Series: []evidence.Series{conns}},
		{Name: "http_requests_total", Class: MetricRequests, Unit: "/s", Series: []evidence.Series{flat}},
	}
	fs := DetectLoadSurge(sets, w)
	if len(fs) != 1 || fs[0].Subject != "presence-gateway" || fs[0].fact("ratio") != "4.5" {
		t.Fatalf("load surge findings: %+v", fs)
	}
	oom := Finding{Kind: KindOOMKilled, Subject: "presence-gateway", Object: "pod rt/presence-gateway-6c9d7f5b8k-4wrnm", Time: surge.Add(8 * time.Minute),
		Weight: 0.95, Source: SrcKubernetes, Facts: map[string]string{"memory_limit": "1Gi"}}
	a := Reason([]Finding{oom, fs[0]}, Scope{Service: "presence-gateway", Window: w})
	d := describe(a.Hypotheses[0], Scope{})
	if !strings.Contains(d, "load surge") || !strings.Contains(d, "4.5× connections") {
		t.Errorf("OOM description should name the connection surge: %s", d)
	}
	for name, want := range map[string]bool{"presence_ws_connections_active": true, "http_requests_total": true, "db_pool_active_connections": false,
		"http_request_errors_total": false, "redis_connected_clients": true, "nginx_ingress_controller_request_duration_seconds_sum": false} {
		if got := IsLoadMetric(name); got != want {
			t.Errorf("IsLoadMetric(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDetectCacheSaturation(t *testing.T) {
	w := testWindow()
	fill := w.Start.Add(15 * time.Minute)
	l := evidence.Labels{"instance": "cache-redis-master.catalog.svc:9121"}
	after := func(before, after float64) func(time.Time) float64 {
		return func(t time.Time) float64 {
			if t.Before(fill) {
				return before
			}
			return after
		}
	}
	mk := func(name string, f func(time.Time) float64) MetricSet {
		return MetricSet{Name: name, Class: MetricCache, Series: []evidence.Series{wseries(w, l, f)}}
	}
	const gib = 1 << 30
	sets := []MetricSet{
		mk("redis_memory_max_bytes", func(time.Time) float64 { return 4 * gib }),
		mk("redis_memory_used_bytes", after(2.5*gib, 4*gib)),
		mk("redis_evicted_keys_total", after(0, 1600)),
		mk("redis_keyspace_hits_total", after(940, 350)),
		mk("redis_keyspace_misses_total", after(60, 650)),
	}
	fs := DetectCacheSaturation(sets, w)
	if len(fs) != 1 || fs[0].Subject != "cache-redis-master" {
		t.Fatalf("cache findings: %+v", fs)
	}
	d := describe(&Hypothesis{Kind: KindCacheFull, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
	for _, want := range []string{"maxmemory", "evict", "hit ratio 94% → 35%"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
	// Evictions with plenty of memory and a steady hit ratio: no storm.
	calm := []MetricSet{
		mk("redis_memory_max_bytes", func(time.Time) float64 { return 4 * gib }),
		mk("redis_memory_used_bytes", func(time.Time) float64 { return 1 * gib }),
		mk("redis_evicted_keys_total", after(0, 5)),
		mk("redis_keyspace_hits_total", func(time.Time) float64 { return 940 }),
		mk("redis_keyspace_misses_total", func(time.Time) float64 { return 60 }),
	}
	if got := DetectCacheSaturation(calm, w); len(got) != 0 {
		t.Errorf("a calm cache is not saturated: %+v", got)
	}
}

func TestCredentialProblem(t *testing.T) {
	tests := []struct{ line, want, provider string }{
		{`error: [textpath] send failed status=401 code=20003 message="Authenticate: API key expired" key_id=kp_live_4f9a`, "expired", "textpath"},
		{`level=error msg="charge failed" provider=stripe err="401 Unauthorized: Invalid API Key provided"`, "invalid", "stripe"},
		{`ERROR upstream call failed: token has expired`, "expired", ""},
		{`ERROR login failed for user alice: wrong password`, "", ""},
	}
	for _, tc := range tests {
		if got := CredentialProblem(tc.line); got != tc.want {
			t.Errorf("CredentialProblem(%q) = %q, want %q", tc.line, got, tc.want)
		}
		if tc.provider != "" && providerTag(tc.line) != tc.provider {
			t.Errorf("providerTag(%q) = %q, want %q", tc.line, providerTag(tc.line), tc.provider)
		}
	}
	if k, _ := ClassifyLine(`2026-07-01T09:40:09Z error query failed err=ERROR: query_wait_timeout (SQLSTATE 08P01)`); k != KindDatabase {
		t.Errorf("query_wait_timeout classified as %q, want database", k)
	}
}

func TestSingleStartupReadinessBlipIsNotSubstantial(t *testing.T) {
	for _, tc := range []struct {
		count string
		want  bool
	}{{"1", false}, {"2", false}, {"3", true}, {"12", true}} {
		f := &Finding{Kind: KindProbeFailure, Source: SrcEvents, Facts: map[string]string{"count": tc.count}}
		if got := substantial(f); got != tc.want {
			t.Errorf("probe failure seen %s times: substantial = %v, want %v", tc.count, got, tc.want)
		}
	}
}

func TestAffectedSystemsOnlyRealNames(t *testing.T) {
	sc := Scope{Service: "order-api", Known: map[string]bool{"order-api": true, "order-worker": true, "order-worker-5d8f9c7b6d-x2x9q": true}}
	for name, want := range map[string]bool{"order-worker": true, "non-replication": false, "postgresql": true, "pg-primary-01.internal": true,
		"api.parcelrate.io": true, "superuser": false, "ip-10-0-1-7.ec2.internal": true} {
		if got := isSystemName(name, sc); got != want {
			t.Errorf("isSystemName(%q) = %v, want %v", name, got, want)
		}
	}
	db := Finding{Kind: KindDatabase, Subject: "non-replication", Time: time.Now(), Weight: 0.9, Source: SrcLogs, Related: []string{"order-worker"},
		Facts: map[string]string{"line": "FATAL: remaining connection slots are reserved for non-replication superuser connections", "dependency": "non-replication", "caller": "order-worker"}}
	a := Reason([]Finding{db}, sc)
	got := affected(a.Hypotheses[0], sc)
	for _, s := range got {
		if s == "non-replication" {
			t.Errorf("affected systems hold a word from the error text: %v", got)
		}
	}
	if a.Hypotheses[0].Subject != "postgresql" {
		t.Errorf("database subject = %q, want postgresql", a.Hypotheses[0].Subject)
	}
}
