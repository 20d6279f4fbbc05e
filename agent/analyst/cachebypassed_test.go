package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCacheBypassed: an edge cache's hit ratio that falls from a healthy
// level to under half of it (CloudFront's CacheHitRate in percent, a
// Fastly or Varnish ratio as a fraction) while the load on a service rises
// with it is the root of that service's surge; a response handed over that
// the cache may not store (Cache-Control no-store with CloudFront's
// x-cache: Miss, private with Cloudflare's cf-cache-status: BYPASS) says
// why, and the change that made the responses so (of a service whose load
// rose too, or one that speaks of caching) is the sender. A fall without a
// surge, a ratio that was never healthy, and a surge with a steady ratio
// are not it; the origin's own later change does not fit.
func TestCacheBypassed(t *testing.T) {
	w := testWindow()
	fell := w.Start.Add(10 * time.Minute)
	step := func(before, after float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(fell) {
				return before * (1 + 0.01*float64(at.Minute()%3))
			}
			return after
		}
	}
	cloudfront := MetricSet{Name: "AWS/CloudFront/CacheHitRate", Class: MetricHitRatio, Origin: SrcCloudWatch, Series: []evidence.Series{
		wseries(w, evidence.Labels{"metric_name": "CacheHitRate", "DistributionId": "E1ABCDEF", "stat": "Average"}, step(91, 8))}}
	fastly := MetricSet{Name: "fastly_rt_hit_ratio", Class: MetricHitRatio, Origin: SrcMetrics, Series: []evidence.Series{
		wseries(w, evidence.Labels{"__name__": "fastly_rt_hit_ratio", "service_id": "shop-www"}, step(0.88, 0.12))}}
	never := MetricSet{Name: "AWS/CloudFront/CacheHitRate", Class: MetricHitRatio, Series: []evidence.Series{wseries(w, evidence.Labels{"metric_name": "CacheHitRate"}, step(30, 10))}}
	steady := MetricSet{Name: "AWS/CloudFront/CacheHitRate", Class: MetricHitRatio, Series: []evidence.Series{wseries(w, evidence.Labels{"metric_name": "CacheHitRate"}, step(90, 90))}}
	surge := func(svc string) Finding {
		return Finding{Kind: KindLoadSurge, Subject: svc, Time: fell.Add(-3 * time.Minute), Summary: "load on " + svc + " rose ~14.2× (requests from 40/s to 568/s in total)"}
	}
	curlCF := evidence.CommandOutput{Command: "curl -sI https://www.example-shop.com/p/boots-41", Lines: []string{"HTTP/2 200", "cache-control: private, no-cache, no-store, max-age=0, must-revalidate", "x-cache: Miss from cloudfront"}}
	curlFlare := evidence.CommandOutput{Command: "curl -sI https://shop.example.org/product/42", Lines: []string{"HTTP/2 200", "Cache-Control: private, max-age=0", "CF-Cache-Status: BYPASS"}}
	curlHit := evidence.CommandOutput{Command: "curl -sI https://www.example-shop.com/help", Lines: []string{"HTTP/2 200", "cache-control: s-maxage=300, stale-while-revalidate", "x-cache: Hit from cloudfront"}}
	web := evidence.Change{Timestamp: fell.Add(-6 * time.Minute), Service: "shop-web", Kind: "deploy", Description: "shop-web 5.0.0: product pages render per request with live prices"}
	edge := evidence.Change{Timestamp: fell.Add(-2 * time.Minute), Service: "edge-config", Kind: "config", Description: "VCL: pass requests carrying the session cookie (cache bypass for logged-in users)"}
	own := evidence.Change{Timestamp: fell.Add(40 * time.Minute), Service: "product-api", Kind: "config", Description: "product-api: SEARCH_BOOST=true"}
	cases := []struct {
		name     string
		metrics  []MetricSet
		found    []Finding
		cmds     []evidence.CommandOutput
		changes  []evidence.Change
		want     bool
		sender   string
		response string
	}{
		{"cloudfront, the caller's deploy, no-store and a miss", []MetricSet{cloudfront}, []Finding{surge("product-api"), surge("shop-web")}, []evidence.CommandOutput{curlHit, curlCF}, []evidence.Change{web, own},
			true, "shop-web", "no-store"},
		{"a fraction, cloudflare's bypass, a change that speaks of caching", []MetricSet{fastly}, []Finding{surge("product-api")}, []evidence.CommandOutput{curlFlare}, []evidence.Change{edge, own},
			true, "edge-config", "BYPASS"},
		{"no response handed over", []MetricSet{cloudfront}, []Finding{surge("product-api")}, nil, nil, true, "", ""},
		{"a fall without a surge", []MetricSet{cloudfront}, nil, []evidence.CommandOutput{curlCF}, []evidence.Change{web}, false, "", ""},
		{"never a healthy ratio", []MetricSet{never}, []Finding{surge("product-api")}, nil, nil, false, "", ""},
		{"a steady ratio", []MetricSet{steady}, []Finding{surge("product-api")}, nil, nil, false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Commands: c.cmds, Changes: c.changes, Window: w, Scope: Scope{Service: "product-api"}}
			f, ok := oneFinding(t, detectCacheBypassed(ev, c.found), c.want)
			if !ok {
				return
			}
			if f.Kind != KindCacheBypassed || f.Subject != "product-api" || f.fact("sender") != c.sender || !strings.Contains(f.fact("response"), c.response) || (f.fact("why") != "") != (c.response != "") {
				t.Fatalf("%s on %s sender %q response %q why %q", f.Kind, f.Subject, f.fact("sender"), f.fact("response"), f.fact("why"))
			}
			h := &Hypothesis{Kind: KindCacheBypassed, Subject: f.Subject, Primary: []*Finding{&f}}
			for _, s := range c.found {
				if !cacheBypassed.related(h, &s) {
					t.Errorf("the load surge of %s is not related", s.Subject)
				}
			}
			for _, ch := range c.changes {
				cf := Finding{Kind: KindDeploy, Subject: ch.Service, Summary: ch.Description, Facts: map[string]string{"description": ch.Description}}
				if fits := cacheBypassed.fitsChange(h, &cf); fits != (ch.Service == c.sender) {
					t.Errorf("change of %s fits %v", ch.Service, fits)
				}
			}
			d := describe(h, Scope{})
			if !strings.Contains(d, "edge cache") || c.sender != "" && !strings.Contains(d, c.sender) {
				t.Errorf("description: %s", d)
			}
		})
	}
}
