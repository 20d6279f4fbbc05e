package analyst

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Edge caches' exporters in Prometheus form are read as the hit ratio
// CloudFront's CacheHitRate is: Fastly's and CloudFront's ratio gauges as
// they are, Varnish's, Fastly's and Cloudflare's counters as hits over
// every request they answered (a pass counts against the hits). Other
// caches' hit counters (Redis, CoreDNS, an application's) are not edge
// caches.
func TestEdgeHitMetrics(t *testing.T) {
	for name, want := range map[string]bool{
		"fastly_rt_hit_ratio":                   true,
		"aws_cloudfront_cache_hit_rate_average": true,
		"varnish_main_cache_hit":                true,
		"fastly_rt_hits_total":                  true,
		"cloudflare_zone_requests_cached":       true,
		"varnish_main_cache_miss":               false,
		"cloudflare_zone_requests_total":        false,
		"redis_keyspace_hits_total":             false,
		"coredns_cache_hits_total":              false,
		"caffeine_cache_hit_ratio":              false,
		"http_requests_total":                   false,
	} {
		if got := IsEdgeHitMetric(name); got != want {
			t.Errorf("IsEdgeHitMetric(%q) = %v, want %v", name, got, want)
		}
		if class, _ := ClassifyMetric(name); want && class != MetricHitRatio {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", name, class, MetricHitRatio)
		}
	}

	w := testWindow()
	fell := w.Start.Add(10 * time.Minute)
	// counter grows by perSec(t) per second, sampled every 30 s
	counter := func(l evidence.Labels, perSec func(time.Time) float64) evidence.Series {
		s := evidence.Series{Labels: l}
		v := 0.0
		for at := w.BaselineStart; !at.After(w.End); at = at.Add(30 * time.Second) {
			v += 30 * perSec(at)
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return s
	}
	before := func(b, a float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(fell) {
				return b
			}
			return a
		}
	}
	lbl := func(name string, kv ...string) evidence.Labels {
		l := evidence.Labels{"__name__": name}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	surge := Finding{Kind: KindLoadSurge, Subject: "product-api", Time: fell.Add(-2 * time.Minute), Summary: "load on product-api rose ~11.8× (requests from 40/s to 472/s in total)"}
	for _, tc := range []struct {
		name   string
		hits   evidence.Series
		others map[string]evidence.Series
		ratio  float64 // the ratio after the fall
		fact   string
	}{
		{"varnish: hits against misses and passes",
			counter(lbl("varnish_main_cache_hit", "instance", "varnish-0:9131"), before(900, 50)),
			map[string]evidence.Series{
				"varnish_main_cache_miss":    counter(lbl("varnish_main_cache_miss", "instance", "varnish-0:9131"), before(90, 90)),
				"varnish_main_cache_hitpass": counter(lbl("varnish_main_cache_hitpass", "instance", "varnish-0:9131"), before(0, 10)),
				"varnish_main_s_pass":        counter(lbl("varnish_main_s_pass", "instance", "varnish-0:9131"), before(10, 850)),
			}, 50.0 / 1000, "fell from 90% to 5%"},
		{"fastly: hits against miss and pass per service",
			counter(lbl("fastly_rt_hits_total", "service_id", "7Hq2shopwww", "service_name", "shop-www", "datacenter", "FRA"), before(450, 40)),
			map[string]evidence.Series{
				"fastly_rt_miss_total": counter(lbl("fastly_rt_miss_total", "service_id", "7Hq2shopwww", "service_name", "shop-www", "datacenter", "FRA"), before(45, 60)),
				"fastly_rt_pass_total": counter(lbl("fastly_rt_pass_total", "service_id", "7Hq2shopwww", "service_name", "shop-www", "datacenter", "FRA"), before(5, 400)),
			}, 40.0 / 500, "of 7Hq2shopwww fell from 90% to 8%"},
		{"cloudflare: cached against all requests of the zone",
			counter(lbl("cloudflare_zone_requests_cached", "zone", "example-shop.com"), before(800, 30)),
			map[string]evidence.Series{
				"cloudflare_zone_requests_total": counter(lbl("cloudflare_zone_requests_total", "zone", "example-shop.com"), before(1000, 1000)),
			}, 30.0 / 1000, "of example-shop.com fell from 80% to 3%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.hits.Labels["__name__"]
			ss, setName := edgeHitRatio(name, []evidence.Series{tc.hits}, func(n string) []evidence.Series {
				if s, ok := tc.others[n]; ok {
					return []evidence.Series{s}
				}
				return nil
			})
			if len(ss) != 1 || !strings.HasPrefix(setName, "cache hit ratio ("+name+" / ") {
				t.Fatalf("%d series named %q", len(ss), setName)
			}
			last := ss[0].Points[len(ss[0].Points)-1].V
			if math.Abs(last-tc.ratio) > 0.01 {
				t.Errorf("ratio after the fall %.3f, want %.3f", last, tc.ratio)
			}
			set := MetricSet{Name: setName, Class: MetricHitRatio, Unit: "%", Origin: SrcMetrics, Series: ss}
			ev := &Gathered{Metrics: []MetricSet{set}, Window: w, Scope: Scope{Service: "product-api"}}
			f, ok := oneFinding(t, detectCacheBypassed(ev, []Finding{surge}), true)
			if !ok {
				return
			}
			if f.Kind != KindCacheBypassed || !strings.Contains(f.fact("hit_ratio"), tc.fact) {
				t.Errorf("%s: hit ratio %q, want %q", f.Kind, f.fact("hit_ratio"), tc.fact)
			}
		})
	}
	// a hit counter without the counters of the other requests is no ratio
	if ss, _ := edgeHitRatio("varnish_main_cache_hit", []evidence.Series{counter(lbl("varnish_main_cache_hit"), before(900, 50))}, func(string) []evidence.Series { return nil }); ss != nil {
		t.Errorf("a ratio from the hits alone: %+v", ss)
	}
	// a gauge is read as it is
	g := wseries(w, lbl("fastly_rt_hit_ratio", "service_id", "x"), func(time.Time) float64 { return 0.9 })
	if ss, n := edgeHitRatio("fastly_rt_hit_ratio", []evidence.Series{g}, nil); len(ss) != 1 || n != "fastly_rt_hit_ratio" {
		t.Errorf("gauge: %d series named %q", len(ss), n)
	}
}
