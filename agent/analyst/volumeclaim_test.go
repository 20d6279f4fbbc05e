package analyst

import (
	"reflect"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestVolumeClaim checks an alert's claim that a volume is filling against
// the kubelet's volume series: confirmed with its time to full and the
// pod's byte series that grows with it, refuted when the volume is roomy
// and flat, left alone when no volume series can tell.
func TestVolumeClaim(t *testing.T) {
	t0 := time.Date(2026, 11, 3, 8, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	const gi = float64(1 << 30)
	kubelet := evidence.Labels{"job": "kubelet", "metrics_path": "/metrics", "namespace": "search", "persistentvolumeclaim": "data-search-index-1", "node": "ip-10-2-3-4.ec2.internal"}
	series := func(name string, l evidence.Labels, v0, perMin float64) MetricSet {
		var pts []evidence.Point
		for i := -60; i <= 60; i += 5 {
			pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v0 + perMin*float64(i+60)})
		}
		return MetricSet{Name: name, Class: MetricVolume, Unit: "bytes", Origin: SrcMetrics, Series: []evidence.Series{{Labels: l, Points: pts}}}
	}
	pod := evidence.Labels{"namespace": "search", "pod": "search-index-1", "instance": "10.2.7.19:9114"}
	sc := Scope{Message: "KubePersistentVolumeFillingUp: The PersistentVolume claimed by data-search-index-1 in Namespace search is expected to fill up within four days. Currently 12.5% is available.",
		Service: "search-index", Namespace: "search", Window: w}
	cases := []struct {
		name    string
		metrics []MetricSet
		want    []string // nil for no finding
	}{
		{"filling, segments grow", []MetricSet{
			series("kubelet_volume_stats_capacity_bytes", kubelet, 100*gi, 0),
			series("kubelet_volume_stats_used_bytes", kubelet, 80*gi, 0.05*gi),
			series("elasticsearch_indices_store_size_bytes", pod, 70*gi, 0.05*gi),
			series("elasticsearch_jvm_memory_used_bytes", pod, 3*gi, 0)},
			[]string{"is real", "full in about", "elasticsearch_indices_store_size_bytes"}},
		{"roomy and flat", []MetricSet{
			series("kubelet_volume_stats_capacity_bytes", kubelet, 100*gi, 0),
			series("kubelet_volume_stats_available_bytes", kubelet, 60*gi, 0)},
			[]string{"not borne out", "40% full"}},
		{"full but flat", []MetricSet{
			series("kubelet_volume_stats_capacity_bytes", kubelet, 100*gi, 0),
			series("kubelet_volume_stats_used_bytes", kubelet, 92*gi, 0)},
			[]string{"is real", "92% full (92.0 GiB of 100.0 GiB)."}},
		{"no volume series", []MetricSet{series("elasticsearch_indices_store_size_bytes", pod, 70*gi, 0.05*gi)}, nil},
	}
	for _, c := range cases {
		fs := detectVolumeClaim(&Gathered{Metrics: c.metrics, Scope: sc, Window: w}, nil)
		if (len(fs) == 1) != (c.want != nil) {
			t.Errorf("%s: findings %+v", c.name, fs)
			continue
		}
		if c.want == nil {
			continue
		}
		h := &Hypothesis{Kind: KindVolumeClaim, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		wantDescribed(t, h, sc, c.want...)
	}
	if fs := detectVolumeClaim(&Gathered{Metrics: cases[0].metrics, Scope: Scope{Message: "search-index is slow", Service: "search-index", Window: w}, Window: w}, nil); len(fs) != 0 {
		t.Errorf("no volume alert, findings %+v", fs)
	}
}

// TestVolumeClaimMetrics: a volume claim gathers the kubelet's volume
// series and the byte series of the pod on the named claim, not other
// pods' series, counters or container series.
func TestVolumeClaimMetrics(t *testing.T) {
	labels := []evidence.Labels{
		{"__name__": "kubelet_volume_stats_used_bytes", "persistentvolumeclaim": "data-search-index-1", "namespace": "search"},
		{"__name__": "kubelet_volume_stats_capacity_bytes", "persistentvolumeclaim": "data-search-index-1", "namespace": "search"},
		{"__name__": "kubelet_volume_stats_inodes_used", "persistentvolumeclaim": "data-search-index-1", "namespace": "search"},
		{"__name__": "elasticsearch_indices_store_size_bytes", "pod": "search-index-1"},
		{"__name__": "elasticsearch_transport_tx_size_bytes_total", "pod": "search-index-1"},
		{"__name__": "container_memory_working_set_bytes", "pod": "search-index-1"},
		{"__name__": "redis_memory_used_bytes", "pod": "session-cache-0"},
		{"__name__": "http_requests_total", "pod": "search-index-1"},
	}
	sc := Scope{Message: "KubePersistentVolumeFillingUp for data-search-index-1 in search, 12% left", Namespace: "search"}
	got := volumeClaimMetrics(labels, sc)
	want := []string{"elasticsearch_indices_store_size_bytes", "kubelet_volume_stats_capacity_bytes", "kubelet_volume_stats_used_bytes"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("volumeClaimMetrics = %v, want %v", got, want)
	}
	for text, want := range map[string]bool{
		"KubePersistentVolumeFillingUp for data-x-0": true,
		"the disk on db-1 is filling up fast":        true,
		"NodeFilesystemSpaceFillingUp on node-3":     true,
		"checkout is slow since the deploy":          false,
		"pods are filling the queue":                 false,
	} {
		if volumeFillRE.MatchString(text) != want {
			t.Errorf("volumeFillRE(%q) = %v, want %v", text, !want, want)
		}
	}
}
