package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNoisyNeighbour checks that a node's CPU saturating with one
// container's CPU rising far above the others' names that container's
// workload, with the pods sharing the node as its victims; a node busy
// with every pod's load names nobody.
func TestNoisyNeighbour(t *testing.T) {
	t0 := time.Date(2026, 11, 5, 1, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	onset := t0.Add(22 * time.Minute)
	series := func(labels evidence.Labels, before, after float64, from time.Time) evidence.Series {
		s := evidence.Series{Labels: labels}
		for m := -60; m < 60; m++ {
			at := t0.Add(time.Duration(m) * time.Minute)
			if at.Before(from) {
				continue
			}
			v := before
			if !at.Before(onset) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return s
	}
	node := "ip-10-40-3-112.eu-west-1.compute.internal"
	nodeCPU := MetricSet{Name: "instance:node_cpu_utilisation:rate5m", Class: MetricSaturation, Series: []evidence.Series{
		series(evidence.Labels{"instance": node, "job": "node-exporter"}, 0.31, 0.99, w.BaselineStart),
		series(evidence.Labels{"instance": "ip-10-40-1-57.eu-west-1.compute.internal", "job": "node-exporter"}, 0.30, 0.33, w.BaselineStart),
	}}
	pod := func(name string, before, after float64, from time.Time) evidence.Series {
		return series(evidence.Labels{"pod": name, "namespace": "catalog", "node": node}, before, after, from)
	}
	cases := []struct {
		name string
		pods []evidence.Series
		want string
	}{
		{"a CronJob's pod takes the node", []evidence.Series{
			pod("catalog-feed-export-29897400-7xk2p", 0, 7.3, onset),
			pod("search-api-5f7b8c9d6-4kxjq", 0.6, 0.7, w.BaselineStart),
			pod("product-service-6c9d8b7f5-j4ptv", 0.2, 0.2, w.BaselineStart),
		}, "catalog-feed-export"},
		{"every pod busier", []evidence.Series{
			pod("search-api-5f7b8c9d6-4kxjq", 1.0, 3.0, w.BaselineStart),
			pod("product-service-6c9d8b7f5-j4ptv", 1.0, 2.6, w.BaselineStart),
		}, ""},
	}
	for _, c := range cases {
		cpu := MetricSet{Name: "container_cpu_usage_seconds_total", Class: MetricSaturation, Series: c.pods}
		fs := detectNoisyNeighbour(&Gathered{Metrics: []MetricSet{nodeCPU, cpu}, Window: w}, nil)
		got := ""
		if len(fs) == 1 {
			got = fs[0].Subject
		}
		if got != c.want || len(fs) > 1 {
			t.Errorf("%s: findings %+v, want %q", c.name, fs, c.want)
			continue
		}
		if got != "" {
			f := fs[0]
			if f.fact("batch") != "true" || !f.relates("search-api") || !f.relates(node) || !f.Time.Equal(onset) {
				t.Errorf("%s: finding %+v", c.name, f)
			}
		}
	}
}

// TestNoisyNeighbourReadings checks the neighbour found from the pods' CPU
// readings (kubectl top pod) on a node whose CPU series, in cores, reaches
// its size (kubectl top node's share, or its allocatable CPU), when the
// neighbour's containers have no series: the workload using most of the
// node is named with the others there as victims; a node shared evenly,
// or one whose size is unknown, names nobody.
func TestNoisyNeighbourReadings(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 15, 15, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	onset := t0.Add(17 * time.Minute)
	node := "ip-10-7-3-21.eu-central-1.compute.internal"
	cores := func(mode string, before, after float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": "node_cpu_seconds_total", "instance": "10.7.3.21:9100", "node": node, "mode": mode}}
		for m := -60; m < 60; m++ {
			at := t0.Add(time.Duration(m) * time.Minute)
			v := before
			if !at.Before(onset) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return s
	}
	nodeCPU := MetricSet{Name: "node_cpu_seconds_total", Class: MetricSaturation, Series: []evidence.Series{
		cores("user", 2.4, 7.7), cores("system", 0.3, 0.4), cores("idle", 5.2, 0.1),
	}}
	victimCPU := MetricSet{Name: "container_cpu_usage_seconds_total", Class: MetricSaturation, Series: []evidence.Series{
		{Labels: evidence.Labels{"pod": "search-api-6f8b7c9d5-2xkqp", "namespace": "search", "node": node}, Points: []evidence.Point{{T: t0.Add(-30 * time.Minute), V: 0.45}, {T: onset.Add(time.Minute), V: 0.47}}},
		{Labels: evidence.Labels{"pod": "search-api-6f8b7c9d5-7mz4w", "namespace": "search", "node": node}, Points: []evidence.Point{{T: t0.Add(-30 * time.Minute), V: 0.46}, {T: onset.Add(time.Minute), V: 0.49}}},
	}}
	use := func(ns, name, cpu string) PodUsage {
		return PodUsage{Usage: evidence.Usage{Kind: "Pod", Namespace: ns, Name: name, CPU: resource.MustParse(cpu)}, Node: node}
	}
	topNode := []evidence.Usage{{Kind: "Node", Name: node, CPU: resource.MustParse("7934m"), CPUPercent: 100}}
	allocatable := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m")}}}}
	cases := []struct {
		name      string
		usage     []PodUsage
		nodeUsage []evidence.Usage
		nodes     []corev1.Node
		want      string
	}{
		{"a Deployment without a CPU limit, kubectl top node", []PodUsage{
			use("media", "media-transcoder-7d9f6b8c5-4wqtz", "3712m"), use("media", "media-transcoder-7d9f6b8c5-n8rkx", "3689m"),
			use("search", "search-api-6f8b7c9d5-2xkqp", "471m"), use("search", "search-api-6f8b7c9d5-7mz4w", "489m"),
		}, topNode, nil, "media-transcoder"},
		{"a CronJob's pod, the node's allocatable", []PodUsage{
			use("reports", "ledger-export-29404110-7xk2q", "6.8"),
			use("search", "search-api-6f8b7c9d5-2xkqp", "471m"), use("monitoring", "node-exporter-w2b8c", "40m"),
		}, nil, allocatable, "ledger-export"},
		{"shared evenly", []PodUsage{
			use("media", "media-transcoder-7d9f6b8c5-4wqtz", "2900m"),
			use("search", "search-api-6f8b7c9d5-2xkqp", "2400m"), use("search", "search-api-6f8b7c9d5-7mz4w", "2500m"),
		}, topNode, nil, ""},
		{"the node's size unknown", []PodUsage{
			use("media", "media-transcoder-7d9f6b8c5-4wqtz", "7400m"), use("search", "search-api-6f8b7c9d5-2xkqp", "471m"),
		}, nil, nil, ""},
	}
	for _, c := range cases {
		ev := &Gathered{Metrics: []MetricSet{nodeCPU, victimCPU}, Window: w}
		ev.K8s.Usage, ev.K8s.NodeUsage, ev.K8s.Nodes = c.usage, c.nodeUsage, c.nodes
		fs := detectNoisyNeighbour(ev, nil)
		got := ""
		if len(fs) == 1 {
			got = fs[0].Subject
		}
		if got != c.want || len(fs) > 1 {
			t.Errorf("%s: findings %+v, want %q", c.name, fs, c.want)
			continue
		}
		if got == "" {
			continue
		}
		f := fs[0]
		if !f.relates("search-api") || !f.relates(node) || !f.Time.Equal(onset) || f.fact("node_peak") != "97%" && f.fact("node_peak") != "100%" || len(f.Evidence) != 2 {
			t.Errorf("%s: finding %+v", c.name, f)
		}
		if c.want == "ledger-export" && f.fact("batch") != "true" {
			t.Errorf("%s: not a batch job: %+v", c.name, f)
		}
	}
}
