package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestClassifyResourceGauges keeps what pods request and nodes hold as
// gauges read as they are (not request rates, not anomalies), in the
// metric names of kube-state-metrics v2 and v1.
func TestClassifyResourceGauges(t *testing.T) {
	for _, n := range []string{"kube_pod_container_resource_requests", "kube_pod_container_resource_requests_memory_bytes", "kube_pod_container_resource_requests_cpu_cores",
		"kube_node_status_allocatable", "kube_node_status_allocatable_memory_bytes"} {
		if c, _ := ClassifyMetric(n); c != MetricState {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", n, c, MetricState)
		}
	}
}

func TestOvercommitResource(t *testing.T) {
	for q, want := range map[string]string{
		"KubeMemoryOverCommit fired for prod-eu around 09:45. is it real?": "memory",
		"KubeCPUOverCommit firing on the staging cluster":                  "cpu",
		"are we overcommitted on cpu requests?":                            "cpu",
		"is the cluster memory overcommitted?":                             "memory",
		"checkout is slow since 10:00":                                     "",
	} {
		if got := overcommitResource(q); got != want {
			t.Errorf("overcommitResource(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestRequestOvercommit checks an overcommit alert against
// kube-state-metrics requests and allocatable (v2 names with a resource
// label, v1 names with the resource in the name): real when the requests
// pass the allocatable of all nodes but the largest, with the workload
// whose requests grew named and its pods' use beside its request; not
// borne out when they fit.
func TestRequestOvercommit(t *testing.T) {
	t0 := time.Date(2026, 9, 9, 9, 30, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	const gi = float64(1 << 30)
	gauge := func(labels evidence.Labels, v float64, from time.Duration) evidence.Series {
		var pts []evidence.Point
		for d := -time.Hour; d <= time.Hour; d += 5 * time.Minute {
			if d >= from {
				pts = append(pts, evidence.Point{T: t0.Add(d), V: v})
			}
		}
		return evidence.Series{Labels: labels, Points: pts}
	}
	build := func(v1 bool, res string, unit, backfill float64) []MetricSet {
		reqName, allocName := "kube_pod_container_resource_requests", "kube_node_status_allocatable"
		lbl := func(l evidence.Labels) evidence.Labels {
			if !v1 {
				l["resource"] = res
			}
			return l
		}
		if v1 {
			suffix := "_memory_bytes"
			if res == "cpu" {
				suffix = "_cpu_cores"
			}
			reqName, allocName = reqName+suffix, allocName+suffix
		}
		var reqs, alloc []evidence.Series
		for i, n := range []string{"ip-10-40-1-22", "ip-10-40-1-87", "ip-10-40-2-14", "ip-10-40-2-203", "ip-10-40-3-65"} {
			alloc = append(alloc, gauge(lbl(evidence.Labels{"node": n}), 61.5*unit, -time.Hour))
			// 203 units requested by steady workloads, over five nodes.
			reqs = append(reqs, gauge(lbl(evidence.Labels{"namespace": "shop", "pod": "storefront-7d9c8b6f5-" + string(rune('a'+i)) + "x2kq", "container": "storefront"}), 40.6*unit, -time.Hour))
		}
		for _, p := range []string{"4jq8v", "9xlmt", "kz2wd", "r7p5n"} {
			reqs = append(reqs, gauge(lbl(evidence.Labels{"namespace": "ml", "pod": "feature-backfill-6f8d7c5b9-" + p, "container": "backfill"}), backfill*unit, 10*time.Minute))
		}
		var use []evidence.Series
		for _, p := range []string{"4jq8v", "9xlmt", "kz2wd", "r7p5n"} {
			use = append(use, gauge(evidence.Labels{"namespace": "ml", "pod": "feature-backfill-6f8d7c5b9-" + p, "container": "backfill"}, 3.1*unit, 10*time.Minute))
		}
		useName := "container_memory_working_set_bytes"
		if res == "cpu" {
			useName = "container_cpu_usage_seconds_total"
		}
		return []MetricSet{{Name: reqName, Class: MetricState, Series: reqs}, {Name: allocName, Class: MetricState, Series: alloc}, {Name: useName, Class: MetricSaturation, Series: use}}
	}
	cases := []struct {
		name, msg, res string
		v1             bool
		unit, backfill float64
		real           bool
		want           []string
	}{
		{"memory, kube-state-metrics v2", "KubeMemoryOverCommit fired for prod-eu around 09:45. nothing seems broken. is it real?", "memory", false, gi, 16, true,
			[]string{"alert is real", "KubeMemoryOverCommit", "267Gi", "246Gi", "feature-backfill requests 64Gi (4 pods × 16Gi)", "3.1Gi"}},
		{"memory, kube-state-metrics v1 names", "KubeMemoryOverCommit is firing", "memory", true, gi, 16, true, []string{"feature-backfill", "21Gi more"}},
		{"cpu", "KubeCPUOverCommit fired, is it real?", "cpu", false, 1, 16, true, []string{"267 cores of cpu", "feature-backfill"}},
		{"requests fit with a node lost", "KubeMemoryOverCommit fired, is it real?", "memory", false, gi, 2, false, []string{"not borne out", "211Gi"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: build(c.v1, c.res, c.unit, c.backfill), Scope: Scope{Message: c.msg, Window: w}, Window: w}
			fs := detectRequestOvercommit(ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v, want one", fs)
			}
			f := fs[0]
			if (f.fact("real") != "") != c.real {
				t.Fatalf("real %q, want %v: %v", f.fact("real"), c.real, f.Facts)
			}
			d := requestOvercommit.describe(&Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}, ev.Scope)
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q: %s", s, d)
				}
			}
			if c.real && (f.Subject != "feature-backfill" || f.Time != t0.Add(10*time.Minute) || f.fact("why") == "") {
				t.Errorf("subject %q at %s, why %q", f.Subject, f.Time, f.fact("why"))
			}
		})
	}
	if fs := detectRequestOvercommit(&Gathered{Metrics: build(false, "memory", gi, 16), Scope: Scope{Message: "checkout is slow", Window: w}, Window: w}, nil); len(fs) != 0 {
		t.Errorf("findings %+v without an overcommit claim", fs)
	}
}
