package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// testWindow is a one-hour incident window after a one-hour baseline.
func testWindow() Window {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	return Window{BaselineStart: t0, Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}
}

// stepAt makes gauges that read before until on and after from on.
func stepAt(on time.Time) func(before, after float64) func(time.Time) float64 {
	return func(before, after float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(on) {
				return before
			}
			return after
		}
	}
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
	// A broker's queue series (rabbitmq_queue_messages_ready) is about its
	// queue, not about the service the question names.
	if got := SubjectOfLabels(evidence.Labels{"namespace": "inventory", "queue": "inventory.export.requests"}); got != "inventory.export.requests" {
		t.Errorf("queue subject = %q", got)
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
	wantDescribed(t, &Hypothesis{Kind: KindCacheFull, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{}, "maxmemory", "evict", "hit ratio 94% → 35%")
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
	// ElastiCache's CloudWatch metrics, per node: evictions a minute, the
	// hit rate and the memory used against maxmemory in percent. The
	// node speaks for its replication group.
	for _, node := range []evidence.Labels{{"CacheClusterId": "sessions-cache-0001-001"}, {"CacheClusterId": "sessions-cache-002-001", "CacheNodeId": "0001"}} {
		mkCW := func(name string, f func(time.Time) float64) MetricSet {
			return MetricSet{Name: name, Class: MetricCache, Origin: SrcCloudWatch, Series: []evidence.Series{wseries(w, node, f)}}
		}
		cw := []MetricSet{
			mkCW("AWS/ElastiCache/Evictions", after(0, 27000)),
			mkCW("AWS/ElastiCache/CacheHitRate", after(97, 59)),
			mkCW("AWS/ElastiCache/DatabaseMemoryUsagePercentage", after(58, 99.6)),
		}
		fs := DetectCacheSaturation(cw, w)
		if len(fs) != 1 || fs[0].Subject != "sessions-cache" {
			t.Fatalf("ElastiCache findings: %+v", fs)
		}
		wantDescribed(t, &Hypothesis{Kind: KindCacheFull, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{}, "maxmemory", "hit ratio 97% → 59%", "used memory at 100% of maxmemory")
		// A hit rate that holds with memory to spare: evictions alone are no storm.
		calmCW := []MetricSet{
			mkCW("AWS/ElastiCache/Evictions", after(0, 300)),
			mkCW("AWS/ElastiCache/CacheHitRate", func(time.Time) float64 { return 97 }),
			mkCW("AWS/ElastiCache/DatabaseMemoryUsagePercentage", func(time.Time) float64 { return 61 }),
		}
		if got := DetectCacheSaturation(calmCW, w); len(got) != 0 {
			t.Errorf("a calm ElastiCache node is not saturated: %+v", got)
		}
		// At maxmemory, evicting cold keys, its hit rate held: an LRU
		// cache doing its job.
		lru := []MetricSet{
			mkCW("AWS/ElastiCache/Evictions", after(0, 11000)),
			mkCW("AWS/ElastiCache/CacheHitRate", after(97.2, 96.8)),
			mkCW("AWS/ElastiCache/DatabaseMemoryUsagePercentage", after(70, 99.1)),
		}
		if got := DetectCacheSaturation(lru, w); len(got) != 0 {
			t.Errorf("a full cache whose hit rate holds is no storm: %+v", got)
		}
	}
	for name, want := range map[string]bool{"AWS/ElastiCache/Evictions": true, "AWS/ElastiCache/CacheHitRate": true, "AWS/MemoryDB/DatabaseMemoryUsagePercentage": true,
		"AWS/ElastiCache/EngineCPUUtilization": false, "AWS/CloudFront/CacheHitRate": false, "redis_evicted_keys_total": true} {
		if IsCacheMetric(name) != want {
			t.Errorf("IsCacheMetric(%q) = %v", name, !want)
		}
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
