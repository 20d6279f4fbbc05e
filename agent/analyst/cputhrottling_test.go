package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
)

func TestCPUThrottlingLines(t *testing.T) {
	testLines(t, cpuThrottling, []lineCase{
		{"WARN com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta=1m2s).", KindCPUThrottling},
		{"Event loop blocked for more than 500ms", KindCPUThrottling},
		{"INFO event loop started", ""},
	})
}

// TestThrottlingClaim checks that an alert's claim of CPU throttling is
// confirmed by the throttled share of the workload's CFS periods, refuted
// when the share stays low, and kept weaker when no metric can tell.
func TestThrottlingClaim(t *testing.T) {
	t0 := time.Date(2026, 10, 14, 15, 0, 0, 0, time.UTC)
	series := func(v float64) []MetricSet {
		var pts []evidence.Point
		for i := -60; i <= 60; i += 5 {
			x := 0.01
			if i >= -8 {
				x = v
			}
			pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: x})
		}
		return []MetricSet{{Class: MetricCPUThrottle, Unit: "%", Series: []evidence.Series{{
			Labels: evidence.Labels{"namespace": "docs", "pod": "pdf-renderer-7d4c8b9f65-h2wsl", "container": "renderer"}, Points: pts}}}}
	}
	sc := Scope{Message: "Alert CPUThrottlingHigh firing: 83.4% throttling of CPU in namespace docs for container renderer in pod pdf-renderer-7d4c8b9f65-h2wsl.",
		Alert: "CPUThrottlingHigh", Window: Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}}
	cases := []struct {
		name    string
		metrics []MetricSet
		want    bool
		weight  float64
	}{
		{"confirmed by the metrics", series(0.86), true, 0.95},
		{"refuted by the metrics", series(0.04), false, 0},
		{"no metric to tell", nil, true, 0.7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectThrottlingClaim(&Gathered{Metrics: c.metrics, Scope: sc, Window: sc.Window}, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if c.want && (fs[0].Subject != "pdf-renderer" || fs[0].Weight != c.weight) {
				t.Errorf("finding on %s weight %.2f, want pdf-renderer %.2f", fs[0].Subject, fs[0].Weight, c.weight)
			}
		})
	}
	if fs := detectThrottlingClaim(&Gathered{Metrics: series(0.9), Scope: Scope{Message: "checkout is slow", Window: sc.Window}, Window: sc.Window}, nil); len(fs) != 0 {
		t.Errorf("no alert claim, findings %+v", fs)
	}
}

// TestThrottlingTriggerOnlyCPUChange checks that a throttling alert with a
// change just before it blames the CPU limit: a change is its trigger only
// when it changed the CPU (a limit cut); a ConfigMap or log-level change
// near the onset is a coincidence, neither the trigger nor the root.
func TestThrottlingTriggerOnlyCPUChange(t *testing.T) {
	t0 := time.Date(2026, 10, 14, 15, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	var pts []evidence.Point
	for i := -60; i <= 60; i += 5 {
		v := 0.01
		if i >= 5 {
			v = 0.86
		}
		pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
	}
	metrics := []MetricSet{{Class: MetricCPUThrottle, Unit: "%", Series: []evidence.Series{{
		Labels: evidence.Labels{"namespace": "docs", "pod": "pdf-renderer-7d4c8b9f65-h2wsl", "container": "renderer"}, Points: pts}}}}
	sc := Scope{Message: "Alert CPUThrottlingHigh firing: 83.4% throttling of CPU in namespace docs for container renderer in pod pdf-renderer-7d4c8b9f65-h2wsl. PDF exports also feel slow.",
		Alert: "CPUThrottlingHigh", Service: "pdf-renderer", Namespace: "docs", Window: w}
	latency := Finding{Kind: KindLatency, Subject: "pdf-renderer", Object: "metrics http_request_duration_seconds", Namespace: "docs", Time: t0.Add(6 * time.Minute),
		Severity: SevWarning, Weight: 0.8, Source: SrcMetrics, Summary: "latency (http_request_duration_seconds) of pdf-renderer rose from 0.8 s to 4.1 s",
		Facts: map[string]string{"metric": "http_request_duration_seconds", "peak": "4.1 s", "baseline": "0.8 s"}}
	cases := []struct {
		name, changes string
		trigger       string // a word of the trigger's description, "" for none
	}{
		{"log-level ConfigMap change just before", `[
  {"timestamp": "2026-10-14T14:58:00Z", "service": "pdf-renderer", "kind": "config", "description": "pdf-renderer ConfigMap: LOG_LEVEL info -> debug, PDF_FONT_CACHE_DIR /tmp/fonts", "revision": "docs-config#418", "author": "jlee"}
]`, ""},
		{"CPU limit cut, then a log-level change", `[
  {"timestamp": "2026-10-14T14:52:00Z", "service": "pdf-renderer", "kind": "config", "description": "resource right-sizing (cost review Q4): pdf-renderer requests/limits cpu 1 -> 250m", "revision": "infra-live#2291", "author": "finops-bot"},
  {"timestamp": "2026-10-14T14:58:00Z", "service": "pdf-renderer", "kind": "config", "description": "pdf-renderer ConfigMap: LOG_LEVEL info -> debug", "revision": "docs-config#418", "author": "jlee"}
]`, "250m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var changes []evidence.Change
			if err := json.Unmarshal([]byte(c.changes), &changes); err != nil {
				t.Fatal(err)
			}
			fs := detectThrottlingClaim(&Gathered{Metrics: metrics, Changes: changes, Scope: sc, Window: w}, nil)
			fs = append(fs, latency)
			fs = append(fs, DetectChanges(changes, w)...)
			a := Reason(fs, sc)
			if a.Healthy || a.Hypotheses[0].Kind != KindCPUThrottling {
				t.Fatalf("root %v, want cpu_throttling", a.Hypotheses)
			}
			h := a.Hypotheses[0]
			r := Build(a, sc, nil, "")
			switch {
			case c.trigger == "" && h.Trigger != nil:
				t.Errorf("trigger %q, want none", h.Trigger.Summary)
			case c.trigger != "" && (h.Trigger == nil || !strings.Contains(h.Trigger.fact("description"), c.trigger)):
				t.Errorf("trigger %v, want the change with %q", h.Trigger, c.trigger)
			}
			if c.trigger == "" && (strings.Contains(r.RootCause.Description, "LOG_LEVEL") || strings.Contains(r.Recommendations[0].Action, "LOG_LEVEL")) {
				t.Errorf("the coincident change is blamed: %q / %q", r.RootCause.Description, r.Recommendations[0].Action)
			}
		})
	}
}

// TestThrottlingClaimSidecar reads a throttling claim container by
// container, from cAdvisor series (current and pre-1.16 label names) and
// the pods' limits: a sidecar with a limit of a few millicores throttled
// in every period while the main container is not is a real but harmless
// alert; the main container throttled, or a sidecar with a real share of
// CPU throttled, is throttling as before.
func TestThrottlingClaimSidecar(t *testing.T) {
	t0 := time.Date(2026, 8, 19, 8, 15, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	flat := func(labels evidence.Labels, v float64) evidence.Series {
		var pts []evidence.Point
		for i := 2; i <= 60; i += 2 {
			pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return evidence.Series{Labels: labels, Points: pts}
	}
	pod := func(sideLimit string) corev1.Pod {
		var p corev1.Pod
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"image-resizer-5b7c9d8f6-8mwq4","namespace":"media","ownerReferences":[{"kind":"ReplicaSet","name":"image-resizer-5b7c9d8f6"}]},
  "spec":{"containers":[{"name":"resizer","image":"ghcr.io/acme-media/image-resizer:2.14.1","resources":{"limits":{"cpu":"2","memory":"2Gi"},"requests":{"cpu":"1"}}},
    {"name":"config-reloader","image":"ghcr.io/jimmidyson/configmap-reload:v0.13.1","resources":{"limits":{"cpu":"`+sideLimit+`","memory":"32Mi"}}}]},"status":{"phase":"Running"}}`), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lbl := func(key, container string) evidence.Labels {
		return evidence.Labels{"namespace": "media", "pod": "image-resizer-5b7c9d8f6-8mwq4", key: container}
	}
	sets := func(key string, mainShare, sideShare, sideUse float64) []MetricSet {
		return []MetricSet{
			{Name: "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total", Class: MetricCPUThrottle, Unit: "%",
				Series: []evidence.Series{flat(lbl(key, "resizer"), mainShare), flat(lbl(key, "config-reloader"), sideShare)}},
			{Name: "container_cpu_usage_seconds_total", Class: MetricSaturation,
				Series: []evidence.Series{flat(lbl(key, "resizer"), 0.52), flat(lbl(key, "config-reloader"), sideUse)}},
			{Name: "http_server_request_duration_seconds (mean)", Class: MetricLatency, Unit: "s",
				Series: []evidence.Series{flat(evidence.Labels{"service": "image-resizer", "namespace": "media"}, 0.19)}},
		}
	}
	sc := Scope{Message: "CPUThrottlingHigh says 100% throttling for image-resizer in media. is that real? do we need to raise the CPU limit?",
		Service: "image-resizer", Namespace: "media", Alert: "CPUThrottlingHigh", Window: w}
	cases := []struct {
		name      string
		metrics   []MetricSet
		sideLimit string
		sidecar   bool
	}{
		{"10m reloader throttled, resizer not", sets("container", 0.0006, 1, 0.002), "10m", true},
		{"the same in pre-1.16 cAdvisor labels", sets("container_name", 0.0006, 1, 0.002), "10m", true},
		{"50m proxy throttled, idle", sets("container", 0.001, 0.9, 0.004), "50m", true},
		{"the main container throttled too", sets("container", 0.6, 1, 0.002), "10m", false},
		{"a sidecar with a real CPU share throttled", sets("container", 0.001, 0.8, 0.45), "500m", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, K8s: K8sEvidence{Pods: []corev1.Pod{pod(c.sideLimit)}}, Scope: sc, Window: w}
			fs := detectThrottlingClaim(ev, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v, want one", fs)
			}
			f := fs[0]
			if (f.fact("sidecar") != "") != c.sidecar {
				t.Fatalf("sidecar %q, want a sidecar reading: %v (%v)", f.fact("sidecar"), c.sidecar, f.Facts)
			}
			d := cpuThrottling.describe(&Hypothesis{Kind: KindCPUThrottling, Subject: f.Subject, Primary: []*Finding{&f}}, sc)
			if c.sidecar {
				for _, want := range []string{"config-reloader", "cpu limit " + c.sideLimit, "harmless", "resizer is not throttled", "190 ms", "no user impact"} {
					if !strings.Contains(d, want) {
						t.Errorf("description lacks %q: %s", want, d)
					}
				}
				if f.fact("why") == "" || len(f.Evidence) < 3 {
					t.Errorf("why %q, evidence %q", f.fact("why"), f.Evidence)
				}
			} else if !strings.Contains(d, "alert is real") || strings.Contains(d, "harmless") {
				t.Errorf("description: %s", d)
			}
		})
	}
}
