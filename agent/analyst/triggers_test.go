package analyst

import (
	"testing"
	"time"
)

// A change triggers a cause only when its content relates to what the
// cause's chain reached; a change that merely landed before the onset is
// a coincidence for a mechanism whose triggers must name it.
func TestTriggerRelatesByContent(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 13, 12, 0, 0, time.UTC)
	change := func(kind Kind, subject string, before time.Duration, desc string) *Finding {
		return &Finding{Kind: kind, Subject: subject, Time: t0.Add(-before), Facts: map[string]string{"description": desc}}
	}
	pending := &Hypothesis{Kind: KindUnschedulable, Subject: "lag-exporter", Onset: t0, Primary: []*Finding{{Kind: KindUnschedulable, Subject: "lag-exporter", Time: t0,
		Facts: map[string]string{"host_ports": "9100/TCP", "port_holder": "DaemonSet monitoring/node-agent (hostNetwork)"}}}}
	selector := &Hypothesis{Kind: KindUnschedulable, Subject: "geo-indexer", Onset: t0, Primary: []*Finding{{Kind: KindUnschedulable, Subject: "geo-indexer", Time: t0,
		Facts: map[string]string{"selector_unmatched": "disktype=nvme"}}}}
	crash := &Hypothesis{Kind: KindCrashLoop, Subject: "fx-api", Onset: t0, Primary: []*Finding{{Kind: KindCrashLoop, Subject: "fx-api", Time: t0}}}
	flag := change(KindFeatureFlag, "lag-exporter", 10*time.Minute, "enable lag_v2_format for 50% of consumers")
	hostPort := change(KindDeploy, "lag-exporter", 0, "chart 0.9.0: expose metrics on 9100 (containerPort 9100, hostPort 9100)")
	cases := []struct {
		name    string
		h       *Hypothesis
		changes []*Finding
		want    *Finding
	}{
		{"relates: the deploy names the host port", pending, []*Finding{hostPort}, hostPort},
		{"unrelated recent change: a flag of the subject", pending, []*Finding{flag}, nil},
		{"unrelated recent deploy that says nothing of the port", pending, []*Finding{change(KindDeploy, "lag-exporter", 5*time.Minute, "lag-exporter 0.8.3: dependency updates")}, nil},
		{"the relating change wins over a later unrelated one", pending, []*Finding{hostPort, flag, change(KindDeploy, "grafana", -1*time.Minute, "grafana 11.3.1")}, hostPort},
		{"relates but older than a recent change may be", pending, []*Finding{change(KindDeploy, "lag-exporter", 5*time.Hour, "values: hostPort 9100 for the shared scrape job")}, &Finding{}},
		{"another service's change naming the holder", pending, []*Finding{change(KindDeploy, "node-agent", 20*time.Minute, "node-agent DaemonSet 1.8: hostNetwork on")}, &Finding{}},
		{"a port number without the word port is not a port", pending, []*Finding{change(KindConfigChange, "billing", 5*time.Minute, "raise batch size to 9100")}, nil},
		{"a longer number holding the port's digits", pending, []*Finding{change(KindDeploy, "lag-exporter", 5*time.Minute, "expose port 19100")}, nil},
		{"a label the selector requires", selector, []*Finding{change(KindInfraChange, "*", 40*time.Minute, "node pool gp-2 replaced; labels disktype=nvme dropped")}, &Finding{}},
		{"a crash after a deploy of its own service still relates", crash, []*Finding{change(KindDeploy, "fx-api", 3*time.Minute, "fx-api 2.14.3")}, &Finding{}},
		{"a crash and a deploy older than the window of a plain change", crash, []*Finding{change(KindDeploy, "fx-api", 3*time.Hour, "fx-api 2.14.3")}, nil},
		{"a change after the onset", crash, []*Finding{change(KindDeploy, "fx-api", -10*time.Minute, "fx-api 2.14.4")}, nil},
	}
	for _, c := range cases {
		got := nearestChange(c.h, c.changes)
		switch {
		case c.want == nil && got != nil:
			t.Errorf("%s: trigger %q, want none", c.name, got.fact("description"))
		case c.want != nil && got == nil:
			t.Errorf("%s: no trigger", c.name)
		case c.want != nil && c.want.Facts != nil && got != c.want:
			t.Errorf("%s: trigger %q, want %q", c.name, got.fact("description"), c.want.fact("description"))
		}
	}
	// A flag flipped before a pod went Pending is no rival explanation of
	// it either.
	if !coincidentChange(pending, flag) || coincidentChange(pending, hostPort) {
		t.Errorf("coincidentChange: flag %v, host port deploy %v", coincidentChange(pending, flag), coincidentChange(pending, hostPort))
	}
}
