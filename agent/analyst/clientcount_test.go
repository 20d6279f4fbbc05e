package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestParseLogCount: the counts of log lines a transcript takes: grep -c,
// grep -ic, --count, -e PATTERN, grep | wc -l, filters before the count,
// --since in its forms; pipes that keep lines, or other commands, are no
// count.
func TestParseLogCount(t *testing.T) {
	cases := []struct {
		cmd, pod, pattern string
		since             time.Duration
		filters           int
		ok                bool
	}{
		{"kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "ingress-nginx-controller-7d9c6b5f8-lq2xt", "CompareIt-Feedbot", 3 * time.Hour, 0, true},
		{`k logs envoy-5f6d8c9b7-6wq2m -n edge -c envoy --since 1h | grep -ic "python-requests/2.31"`, "envoy-5f6d8c9b7-6wq2m", "python-requests/2.31", time.Hour, 0, true},
		{"kubectl logs gw-0 --since=30m | grep /v2/search | grep -e 10.4.7.19 | wc -l", "gw-0", "10.4.7.19", 30 * time.Minute, 1, true},
		{"kubectl logs gw-0 | grep -v kube-probe | grep --count 'client_id=acme-sync'", "gw-0", "client_id=acme-sync", 0, 1, true},
		{"kubectl logs gw-0 --since=30m | grep Feedbot | tail -3", "", "", 0, 0, false},
		{"kubectl get pods -A | grep -c Running", "", "", 0, 0, false},
		{"kubectl logs gw-0 | wc -l", "", "", 0, 0, false},
	}
	for _, c := range cases {
		lc, ok := parseLogCount(c.cmd)
		if ok != c.ok || ok && (lc.pod != c.pod || lc.pattern != c.pattern || lc.since != c.since || len(lc.filters) != c.filters) {
			t.Errorf("%s: ok %v pod %q pattern %q since %v filters %v", c.cmd, ok, lc.pod, lc.pattern, lc.since, lc.filters)
		}
	}
}

// TestClientCounts: a count of one client's requests in the access log in
// front of a service whose load rose is the load's source when its rate
// (over the span since its first line read, else --since) makes up most
// of the rise: a User-Agent in ingress-nginx's format, an address in
// Envoy's, a client id in a JSON gateway log. A count of errors, of a
// client too small for the rise, or of a log that routes elsewhere, is
// not.
func TestClientCounts(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(20 * time.Minute)
	nginx := `185.199.42.17 - - [01/May/2026:11:20:00 +0000] "GET /v2/search?q=aa+batteries&page=1&sort=price_asc HTTP/1.1" 200 16988 "-" "CompareIt-Feedbot/2.1 (+https://compareit.example/bot)" 399 0.094 [catalog-search-api-8080] [] 10.30.1.44:8080 16981 0.094 200 5e7a9c1b3d5f7e9a1c3b5d7f9e1a3c5b`
	envoy := `[2026-05-01T11:20:00.000Z] "GET /api/quotes/FX HTTP/1.1" 200 - 0 912 31 30 "10.4.7.19" "okhttp/4.12.0" "5b1c" "quotes.example.com" "10.40.1.203:8080" outbound|8080||quote-api.fx.svc.cluster.local 10.40.2.9:51234 10.40.1.203:8080 10.4.7.19:0 - default`
	gw := `{"time":"2026-05-01T11:20:00Z","method":"GET","path":"/v1/orders","status":200,"duration_ms":12,"client_id":"acme-sync","upstream":"orders-api"}`
	surge := func(subj, before, peak string) Finding {
		f := Finding{Kind: KindLoadSurge, Subject: subj, Time: on}
		f.setFact("baseline", before)
		f.setFact("peak", peak)
		return f
	}
	logs := func(pod, line string) LogSet {
		return LogSet{Source: pod, Subject: workloadOfName(pod), Origin: SrcLogs, Lines: []evidence.LogLine{{Time: on, Text: line}}}
	}
	count := func(cmd string, n string) []evidence.CommandOutput {
		return []evidence.CommandOutput{{Command: cmd, Lines: []string{n}}}
	}
	cases := []struct {
		name          string
		logs          []LogSet
		cmds          []evidence.CommandOutput
		found         []Finding
		client, field string
	}{
		{"a crawler's User-Agent at the ingress",
			[]LogSet{logs("ingress-nginx-controller-7d9c6b5f8-lq2xt", nginx)},
			count("kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "771402"),
			[]Finding{surge("search-api", "131/s", "417/s")}, "CompareIt-Feedbot", "user agent"},
		{"an address at the mesh proxy",
			[]LogSet{logs("istio-ingressgateway-6d8f9c7b5-x2k4p", envoy)},
			count("kubectl logs -n istio-system istio-ingressgateway-6d8f9c7b5-x2k4p --since=1h | grep 10.4.7.19 | wc -l", "216000"),
			[]Finding{surge("quote-api", "20/s", "95/s")}, "10.4.7.19", "address"},
		{"a client id at the gateway",
			[]LogSet{logs("api-gateway-5c7d8e9f0-abcde", gw)},
			count("kubectl logs api-gateway-5c7d8e9f0-abcde --since=2h | grep -c acme-sync", "540000"),
			[]Finding{surge("orders-api", "30/s", "160/s")}, "acme-sync", "client id"},
		{"a count of errors",
			[]LogSet{logs("ingress-nginx-controller-7d9c6b5f8-lq2xt", nginx)},
			count("kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c ' 503 '", "771402"),
			[]Finding{surge("search-api", "131/s", "417/s")}, "", ""},
		{"a client too small for the rise",
			[]LogSet{logs("ingress-nginx-controller-7d9c6b5f8-lq2xt", nginx)},
			count("kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "90000"),
			[]Finding{surge("search-api", "131/s", "417/s")}, "", ""},
		{"a log that routes to another service",
			[]LogSet{logs("ingress-nginx-controller-7d9c6b5f8-lq2xt", nginx)},
			count("kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "771402"),
			[]Finding{surge("checkout-api", "131/s", "417/s")}, "", ""},
		{"no load that rose",
			[]LogSet{logs("ingress-nginx-controller-7d9c6b5f8-lq2xt", nginx)},
			count("kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "771402"),
			nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: w}
			fs := detectClientCounts(ev, c.found)
			f, ok := oneFinding(t, fs, c.client != "")
			if !ok {
				return
			}
			if f.fact("client") != c.client || f.fact("client_field") != c.field || f.fact("why") == "" || f.fact("load_source") != c.client {
				t.Errorf("client %q field %q why %q", f.fact("client"), f.fact("client_field"), f.fact("why"))
			}
			if !f.Time.Equal(on) {
				t.Errorf("onset %v, want its first line read %v", f.Time, on)
			}
			h := &Hypothesis{Kind: KindClientSurge, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := describeClientSurge(h, Scope{})
			for _, want := range []string{"one client drives the load on " + c.found[0].Subject, c.client, "request rate rose from"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
		})
	}
}
