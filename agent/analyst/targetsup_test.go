package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A rollout whose new targets cannot be scraped takes the service's share
// of targets up from all to none, though no single series fell; new
// targets that are scraped, or one target of four lost, are no target
// down.
func TestTargetsUpByService(t *testing.T) {
	start := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(2 * time.Hour), End: start.Add(2*time.Hour + 40*time.Minute)}
	roll := start.Add(2*time.Hour + 3*time.Minute)
	target := func(pod, inst string, from, to time.Time, v float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": "up", "job": "shipping-api", "service": "shipping-api", "namespace": "logistics", "pod": pod, "instance": inst, "endpoint": "http"}}
		for t := from; t.Before(to); t = t.Add(time.Minute) {
			s.Points = append(s.Points, evidence.Point{T: t, V: v})
		}
		return s
	}
	old := []evidence.Series{target("a-1", "10.0.0.1:8080", start, roll, 1), target("a-2", "10.0.0.2:8080", start, roll, 1)}
	for _, c := range []struct {
		name string
		new  []evidence.Series
		down bool
	}{
		{"new targets all down", []evidence.Series{target("b-1", "10.0.0.3:8080", roll, w.End, 0), target("b-2", "10.0.0.4:8080", roll, w.End, 0)}, true},
		{"new targets up", []evidence.Series{target("b-1", "10.0.0.3:8080", roll, w.End, 1), target("b-2", "10.0.0.4:8080", roll, w.End, 1)}, false},
		{"one new target of four down", []evidence.Series{target("b-1", "10.0.0.3:8080", roll, w.End, 0), target("b-2", "10.0.0.4:8080", roll, w.End, 1),
			target("b-3", "10.0.0.5:8080", roll, w.End, 1), target("b-4", "10.0.0.6:8080", roll, w.End, 1)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := MetricSet{Name: "up", Class: MetricUp, Origin: SrcMetrics, Series: append(append([]evidence.Series{}, old...), c.new...)}
			var down []Finding
			for _, f := range DetectMetrics([]MetricSet{set}, w) {
				if f.Kind == KindTargetDown {
					down = append(down, f)
				}
			}
			if !c.down {
				if len(down) != 0 {
					t.Fatalf("target down %+v", down)
				}
				return
			}
			if len(down) != 1 || down[0].Subject != "shipping-api" || down[0].Time.Before(roll) {
				t.Fatalf("findings %+v, want shipping-api's targets down from %s", down, roll)
			}
		})
	}
}
