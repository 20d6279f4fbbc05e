package analyst

import (
	"testing"
	"time"
)

// A caller's calls per request to a service rose several times (as
// localization reads them from traces, whatever exporter wrote them) while
// that service shows the load: the caller's widened fan-out is the cause,
// the callee's saturation and its autoscaler at its maximum are what it
// did. A request mix that moved a little, or a callee that shows no load,
// is not this.
func TestFanOutWidened(t *testing.T) {
	at := win.Start.Add(10 * time.Minute)
	loc := func(summary string) Finding {
		return Finding{Kind: KindLocalized, Subject: "bff", Time: at, Weight: 0.6, Source: SrcMetrics, Summary: summary, Evidence: []string{summary}}
	}
	hpa := Finding{Kind: KindHPAMax, Subject: "ratings", Time: at.Add(3 * time.Minute), Weight: 0.8, Summary: "HPA ratings at its maximum of 10 replicas since 14:23 UTC (from 3)"}
	cpu := Finding{Kind: KindSaturation, Subject: "ratings", Time: at, Weight: 0.5, Summary: "container_cpu_usage_seconds_total of ratings rose from 0.06 to 0.61"}
	slow := Finding{Kind: KindLatency, Subject: "pricing", Time: at, Weight: 0.5, Summary: "latency (rpc_server_duration_milliseconds (mean)) of pricing rose from 12 ms to 340 ms"}
	cases := []struct {
		name           string
		found          []Finding
		caller, callee string
		factor         string
	}{
		{"one call became 48, the callee's autoscaler at its maximum",
			[]Finding{loc("bff: calls to ratings per trace of bff rose from 1 to 48 at 14:19"), hpa, cpu}, "bff", "ratings", "48"},
		{"the leader's summary with its next suspects, a fractional baseline, the callee's latency",
			[]Finding{loc("checkout: calls to pricing per trace of checkout rose from 1.5 to 12 at 09:02; next suspects: pricing (latency, score 40)"), slow}, "checkout", "pricing", "8"},
		{"a request mix that moved (1 to 2 calls)",
			[]Finding{loc("bff: calls to ratings per trace of bff rose from 1 to 2 at 14:19"), hpa}, "", "", ""},
		{"a callee that shows no load",
			[]Finding{loc("bff: calls to ratings per trace of bff rose from 1 to 48 at 14:19"), slow}, "", "", ""},
		{"calls that fell", []Finding{loc("bff: calls to ratings per trace of bff fell from 48 to 1 at 14:19"), hpa}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := fanOutWidened(c.found)
			if c.caller == "" {
				if len(out) != 0 {
					t.Fatalf("want none, got %+v", out)
				}
				return
			}
			if len(out) != 1 {
				t.Fatalf("want one finding, got %+v", out)
			}
			f := out[0]
			if f.Subject != c.caller || f.fact("callee") != c.callee || f.fact("factor") != c.factor || !f.relates(c.callee) {
				t.Fatalf("got %s -> %s x%s related %v", f.Subject, f.fact("callee"), f.fact("factor"), f.Related)
			}
			h := &Hypothesis{Kind: KindFanOut, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, "fan-out widened", c.callee, "treats the consequence")
			// The callee's load is the fan-out's consequence.
			for i := range c.found {
				g := &c.found[i]
				if g.Subject == c.callee && !fanOut.related(h, g) {
					t.Errorf("%s finding of %s not related", g.Kind, g.Subject)
				}
			}
		})
	}
}
