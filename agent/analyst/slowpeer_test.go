package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
)

// TestSlowPeers finds an outside dependency (named by its callers' client
// spans: a third-party API, a managed database) whose calls slowed by most
// of what the asked service's requests gained, two hops down or called
// directly, and leaves it alone when the asked service's own time grew
// more than the call's, or when the call did not slow.
func TestSlowPeers(t *testing.T) {
	w := testWindow()
	pct := func(p50, p90 time.Duration) tracegraph.Percentiles {
		return tracegraph.Percentiles{Count: 100, P50: p50, P90: p90}
	}
	ms := time.Millisecond
	graph := func(entry, peer time.Duration, own time.Duration) *tracegraph.Graph {
		return &tracegraph.Graph{
			Services: []tracegraph.ServiceStats{
				{Service: "checkout", Requests: 100, Duration: pct(entry+own, entry+own+50*ms)},
				{Service: "address-svc", Requests: 100, Duration: pct(peer+10*ms, peer+40*ms)},
			},
			Edges: []tracegraph.EdgeStats{
				{Caller: "checkout", Callee: "address-svc", Calls: 100, Latency: pct(peer+12*ms, peer+45*ms)},
				{Caller: "checkout", Callee: "tax-svc", Calls: 100, Latency: pct(60*ms, 90*ms)},
				{Caller: "address-svc", Callee: "api.postcodes.example", Peer: true, Calls: 80, Latency: pct(peer, peer+30*ms)},
				{Caller: "checkout", Callee: "orders-db", Peer: true, Calls: 100, Latency: pct(8*ms, 15*ms)},
			},
		}
	}
	cases := []struct {
		name  string
		asked string
		base  *tracegraph.Graph
		now   *tracegraph.Graph
		want  string
		says  []string
	}{
		{"a third-party API two hops down", "checkout", graph(200*ms, 110*ms, 0), graph(2300*ms, 2200*ms, 0), "api.postcodes.example",
			[]string{"api.postcodes.example", "address-svc's calls", "checkout calls address-svc (checkout → address-svc → api.postcodes.example)", "checkout → tax-svc 60 ms, was 60 ms"}},
		{"asked about the caller itself", "address-svc", graph(200*ms, 110*ms, 0), graph(2300*ms, 2200*ms, 0), "api.postcodes.example", []string{"address-svc's calls to it take 2.20 s"}},
		{"the asked service's own time grew more", "checkout", graph(200*ms, 110*ms, 0), graph(2300*ms, 600*ms, 3000*ms), "", nil},
		{"the outside call did not slow", "checkout", graph(200*ms, 110*ms, 0), graph(200*ms, 130*ms, 2000*ms), "", nil},
	}
	for _, c := range cases {
		fs := slowPeers(c.base, c.now, nil, Scope{Service: c.asked, Window: w})
		if c.want == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings: %s", c.name, len(fs), fs[0].Summary)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != c.want {
			t.Errorf("%s: %v, want one on %s", c.name, fs, c.want)
			continue
		}
		h := &Hypothesis{Kind: KindSlowPeer, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		d := slowPeer.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
		// The asked service's latency is what the slow calls cost it; a
		// deploy of it does not trigger the slow calls.
		lat := &Finding{Kind: KindLatency, Subject: c.asked}
		if !slowPeer.related(h, lat) {
			t.Errorf("%s: the asked service's latency is not related", c.name)
		}
		deploy := &Finding{Kind: KindDeploy, Subject: c.asked, Summary: "deploy of " + c.asked + " 5.0.2"}
		if slowPeer.fitsChange(h, deploy) {
			t.Errorf("%s: a deploy of %s fits", c.name, c.asked)
		}
	}
}
