package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDNSSlow reads the DNS phase that request logs time for each call
// (logfmt "promo-engine.dns_ms=5011", curl's time_namelookup): lookups that
// wait about the resolver's timeout in the window, and not before, are slow
// name resolution; a DNS probe stuck at its timeout names the dead resolver.
func TestDNSSlow(t *testing.T) {
	w := testWindow()
	line := func(at time.Time, dns int) evidence.LogLine {
		return evidence.LogLine{Time: at, Text: fmt.Sprintf(`ts=%s level=info host=cart-01 msg="request" method=GET route=/v2/cart status=200 dur_ms=%d pricing-api.dns_ms=0 pricing-api.connect_ms=0 pricing-api.ttfb_ms=38 promo-engine.dns_ms=%d promo-engine.connect_ms=1 promo-engine.ttfb_ms=35`, at.Format(time.RFC3339), dns+80, dns)}
	}
	build := func(slowEvery int, before bool) LogSet {
		set := LogSet{Source: "cart-01/cart-api.log", Subject: "cart-01", Host: true, Origin: SrcLogs}
		for i := 0; i < 240; i++ {
			at := w.BaselineStart.Add(time.Duration(i) * 30 * time.Second)
			dns := 0
			if (before || !at.Before(w.Start)) && i%slowEvery == 0 {
				dns = 5011
			}
			set.Lines = append(set.Lines, line(at, dns))
		}
		return set
	}
	curl := LogSet{Source: "probe.log", Subject: "probe", Origin: SrcLogs}
	for i := 0; i < 40; i++ {
		at := w.Start.Add(time.Duration(i) * time.Minute)
		curl.Lines = append(curl.Lines, evidence.LogLine{Time: at, Text: fmt.Sprintf("url=https://api.example.com/ time_namelookup=%s time_connect=5.012 time_total=5.3", map[bool]string{true: "5.004", false: "0.002"}[i%4 == 0])})
	}
	probes := []MetricSet{{Name: "probe_dns_lookup_time_seconds", Series: []evidence.Series{
		wseries(w, evidence.Labels{"instance": "10.20.0.2:53", "job": "blackbox-dns"}, func(time.Time) float64 { return 5 }),
		wseries(w, evidence.Labels{"instance": "10.20.0.3:53", "job": "blackbox-dns"}, func(time.Time) float64 { return 0.002 }),
	}}}
	cases := []struct {
		name    string
		logs    []LogSet
		metrics []MetricSet
		subject string
		dead    string
	}{
		{"lookups at the resolver timeout since the window", []LogSet{build(10, false)}, probes, "cart-api", "10.20.0.2"},
		{"curl's name lookup time", []LogSet{curl}, nil, "probe", ""},
		{"as slow before: a habit, not the incident", []LogSet{build(10, true)}, nil, "", ""},
		{"no slow lookup", []LogSet{build(1000, false)}, nil, "", ""},
	}
	for _, c := range cases {
		fs := detectDNSSlow(&Gathered{Logs: c.logs, Metrics: c.metrics, Window: w}, nil)
		if c.subject == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none: %s", c.name, len(fs), fs[0].Summary)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != c.subject || fs[0].fact("timeout") == "" {
			t.Errorf("%s: findings %+v, want one on %s at the resolver timeout", c.name, fs, c.subject)
			continue
		}
		if fs[0].fact("dead_resolver") != c.dead {
			t.Errorf("%s: dead resolver %q, want %q", c.name, fs[0].fact("dead_resolver"), c.dead)
		}
		h := &Hypothesis{Kind: KindDNSSlow, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		if d := dnsSlow.describe(h, Scope{}); !strings.Contains(d, "slow name resolution on "+c.subject) || !strings.Contains(d, "resolv.conf") {
			t.Errorf("%s: description %q", c.name, d)
		}
	}
}

// TestDNSPhaseFields: the fields that time a lookup, and the ones that
// only count lookups.
func TestDNSPhaseFields(t *testing.T) {
	cases := []struct {
		line string
		ms   string // the value read, "" for none
	}{
		{`promo-engine.dns_ms=5011 promo-engine.connect_ms=1`, "5011"},
		{`url=https://api.example.com/ time_namelookup=5.004 time_connect=5.012`, "5.004"},
		{`{"dnsLookupMs": 5003, "connectMs": 2}`, "5003"},
		{`upstream lookup_s=5.01 status=200`, "5.01"},
		{`time=2026-03-04T10:31:00.003Z level=INFO msg="cache stats" window=60s lookups=6817 hits=6569 misses=248`, ""},
		{`INFO resolver stats: resolves=1200 failures=0`, ""},
	}
	for _, c := range cases {
		m := findSubmatch(dnsPhaseRE, c.line)
		got := ""
		if m != nil {
			got = m[5]
		}
		if got != c.ms {
			t.Errorf("dnsPhaseRE on %q read %q, want %q", c.line, got, c.ms)
		}
	}
}
