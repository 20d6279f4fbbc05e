package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestLookupTimeoutLines(t *testing.T) {
	for _, c := range []struct {
		line, name, resolver string
	}{
		{`{"level":"error","msg":"downstream call failed","error":"Get \"http://loyalty-service.loyalty.svc.cluster.local/...\": dial tcp: lookup loyalty-service.loyalty.svc.cluster.local on 172.20.0.10:53: read udp 10.40.12.77:40306->172.20.0.10:53: i/o timeout"}`, "loyalty-service.loyalty.svc.cluster.local", "172.20.0.10:53"},
		{`dial tcp: lookup payments.shop.svc.cluster.local on 10.96.0.10:53: server misbehaving`, "payments.shop.svc.cluster.local", "10.96.0.10:53"},
		{`Error: getaddrinfo EAI_AGAIN ledger.internal`, "ledger.internal", ""},
		// A name that does not exist is not a resolver that is late.
		{`dial tcp: lookup payments.shop.svc.cluster.local on 10.96.0.10:53: no such host`, "", ""},
		{`dial tcp 10.0.3.4:8080: i/o timeout`, "", ""},
	} {
		name, resolver := "", ""
		if m := lookupTimeoutRE.FindStringSubmatch(c.line); m != nil {
			name, resolver = m[1]+m[3], m[2]
		}
		if name != c.name || resolver != c.resolver {
			t.Errorf("%q: name %q resolver %q", c.line, name, resolver)
		}
	}
}

// TestDetectResolverTimeouts names the cluster DNS when a caller's lookups
// of several names time out at one resolver, and not for one name alone.
func TestDetectResolverTimeouts(t *testing.T) {
	lookup := func(host string) string {
		return `{"level":"error","msg":"downstream call failed","host":"` + host + `","error":"dial tcp: lookup ` + host + ` on 172.20.0.10:53: read udp 10.40.12.77:40306->172.20.0.10:53: i/o timeout"}`
	}
	coredns := minedSet("coredns", true, 0, `2026-12-19T18:26:00.942Z [ERROR] plugin/errors: 2 availability-service.travel.svc.cluster.local. AAAA: read udp 10.40.11.249:52973->10.40.0.2:53: i/o timeout`)
	change := evidence.Change{Service: "coredns", Kind: "infra", Description: "kube-system: remove dns-autoscaler; coredns replicas pinned to 2 (was 6)"}
	// The cluster DNS's own trouble read from its events, with neither its
	// log nor a change of it handed over.
	probeKilled := Finding{Kind: KindLivenessKill, Subject: "coredns", Source: SrcEvents, Severity: SevWarning,
		Facts: map[string]string{"message": `Liveness probe failed: Get "http://10.4.2.9:8080/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`}}
	for _, c := range []struct {
		name    string
		sets    []LogSet
		changes []evidence.Change
		found   []Finding
		subject string // "" for none
	}{
		{"two names time out, CoreDNS's log too", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"), lookup("hotel-content.content.svc.cluster.local")), coredns}, nil, nil, "coredns"},
		{"two names, a change names the cluster DNS", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"), lookup("pricing.travel.svc.cluster.local"))}, []evidence.Change{change}, nil, "coredns"},
		{"two names, the cluster DNS's pods failing their probes", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"), lookup("pricing.travel.svc.cluster.local"))}, nil, []Finding{probeKilled}, "coredns"},
		{"two names, the cluster DNS seen healthy", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"), lookup("pricing.travel.svc.cluster.local"))}, nil, []Finding{{Kind: KindLatency, Subject: "coredns", Severity: SevInfo}}, "172.20.0.10:53"},
		{"two names, nothing names the server", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"), lookup("pricing.travel.svc.cluster.local"))}, nil, nil, "172.20.0.10:53"},
		{"one name only", []LogSet{minedSet("booking-api", true, 0, lookup("loyalty-service.loyalty.svc.cluster.local"))}, nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectResolverTimeouts(&Gathered{Logs: c.sets, Changes: c.changes, Window: win}, c.found)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindResolverTimeout, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "time out", "booking-api", "loyalty-service", "172.20.0.10:53")
			if !resolverTimeout.related(h, &Finding{Kind: KindLatency, Subject: "booking-api"}) || resolverTimeout.related(h, &Finding{Kind: KindLatency, Subject: "checkout"}) {
				t.Error("related: the caller's latency is, another service's is not")
			}
		})
	}
}
