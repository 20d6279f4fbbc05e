package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestIdleConnClosed reads a client's failures on reused keep-alive
// connections (Go's net/http, Apache HttpClient, urllib3 as they print
// them), with the client's idle timeout, the change that cut a keep-alive
// timeout in the path and a proxy's idle closes; plain resets and timeouts
// are left to other rules.
func TestIdleConnClosed(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(5 * time.Minute)
	set := func(src string, ls ...string) LogSet {
		s := LogSet{Source: src, Subject: src, Origin: SrcLogs, Host: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 6, Incident: 6, FirstSeen: at, FirstIncident: at, LastSeen: w.End})
		}
		return s
	}
	goEOF := `2026-07-30T07:43:29.052081871Z {"level":"error","ts":"2026-07-30T07:43:29.052Z","caller":"taxclient/client.go:118","msg":"tax quote failed","invoice_id":"INV-3359921","attempt":1,"conn_reused":true,"conn_idle_ms":87666,"error":"Post \"https://tax.internal.acme.io/v2/quote\": EOF"}`
	goIdle := `2026-07-30T07:48:07.051283761Z {"level":"error","ts":"2026-07-30T07:48:07.051Z","caller":"taxclient/client.go:118","msg":"tax quote failed","invoice_id":"INV-4048612","attempt":1,"conn_reused":true,"conn_idle_ms":28062,"error":"Post \"https://tax.internal.acme.io/v2/quote\": http: server closed idle connection"}`
	goReset := `2026-07-30T07:51:08.177716692Z {"level":"error","ts":"2026-07-30T07:51:08.177Z","caller":"taxclient/client.go:118","msg":"tax quote failed","invoice_id":"INV-6453932","attempt":1,"conn_reused":true,"conn_idle_ms":18402,"error":"Post \"https://tax.internal.acme.io/v2/quote\": read tcp 10.42.6.17:33758->10.20.3.14:443: read: connection reset by peer"}`
	goConfig := `2026-07-30T05:30:00.084658600Z {"level":"info","ts":"2026-07-30T05:30:00.084Z","caller":"main.go:52","msg":"http client config","max_idle_conns_per_host":32,"idle_conn_timeout":"90s","timeout":"15s","disable_keep_alives":false}`
	haproxy := `2026-07-30T07:43:28.738Z lb-int-01 haproxy[1821]: 10.42.6.17:53682 [30/Jul/2026:07:43:29.052] fe_tax_https~ fe_tax_https/<NOSRV> -1/-1/-1/-1/10001 408 0 - - cR-- 44/41/0/0/0 0/0 "<BADREQ>"`
	javaNoResp := `2026-07-30 07:44:02.118 ERROR 1 --- [pool-3-thread-7] c.a.b.TaxClient : quote failed: org.apache.http.NoHttpResponseException: tax.internal.acme.io:443 failed to respond`
	pyRemote := `2026-07-30 07:44:02,118 ERROR billing.tax - quote failed: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))`
	change := evidence.Change{Timestamp: at.Add(-2 * time.Minute), Service: "haproxy-internal", Kind: "infra", Description: "haproxy-internal (lb-int-01/02): defaults hardening: timeout http-keep-alive 300s -> 10s, timeout http-request 30s -> 10s"}
	deploy := evidence.Change{Timestamp: at.Add(-3 * time.Minute), Service: "tax-engine", Kind: "deploy", Description: "tax-engine 8.2.4: 2026-08 VAT rates"}
	cases := []struct {
		name    string
		logs    []LogSet
		changes []evidence.Change
		target  string
		says    []string
		facts   map[string]string
	}{
		{"Go client behind a load balancer whose keep-alive was cut", []LogSet{set("billing-worker", goEOF, goIdle, goReset, goConfig), set("haproxy-lb-int-01", haproxy)}, []evidence.Change{deploy, change},
			"tax.internal.acme.io", []string{"billing-worker's idle keep-alive connections to tax.internal.acme.io are closed", "its idle timeout is 90s", "server closed idle connection", "cut by the infra change of haproxy-internal"},
			map[string]string{"server_idle": "10s", "client_idle": "90s", "idle_range": "18-88 s"}},
		{"Apache HttpClient", []LogSet{set("billing-worker", javaNoResp)}, nil, "tax.internal.acme.io", []string{"closed by the other side"}, nil},
		{"urllib3", []LogSet{set("billing-worker", pyRemote)}, nil, "", []string{"an early close"}, nil},
		{"resets without a sign of reuse are not this", []LogSet{set("billing-worker", `{"level":"error","msg":"call failed","error":"read tcp 10.0.0.1:4431->10.0.0.2:443: read: connection reset by peer"}`)}, nil, "-", nil, nil},
		{"a hang-up without a sign of reuse is not this", []LogSet{set("billing-worker", `{"level":50,"msg":"quote failed","err":{"type":"Error","message":"socket hang up","code":"ECONNRESET"}}`)}, nil, "-", nil, nil},
		{"a callee that failed to respond in time is not this", []LogSet{set("billing-worker", `ERROR quote failed: upstream tax-engine failed to respond within 5000 ms`)}, nil, "-", nil, nil},
		{"timeouts on reused connections are not this", []LogSet{set("billing-worker", `{"level":"error","msg":"call failed","conn_reused":true,"error":"Post \"https://tax/v2\": context deadline exceeded"}`)}, nil, "-", nil, nil},
	}
	for _, c := range cases {
		fs := detectIdleConnClosed(&Gathered{Logs: c.logs, Changes: c.changes, Window: w}, nil)
		if c.target == "-" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none", c.name, len(fs))
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != "billing-worker" || fs[0].fact("target") != c.target {
			t.Errorf("%s: findings %+v, want one on billing-worker calling %q", c.name, fs, c.target)
			continue
		}
		for k, v := range c.facts {
			if got := fs[0].fact(k); got != v {
				t.Errorf("%s: fact %s = %q, want %q", c.name, k, got, v)
			}
		}
		h := &Hypothesis{Kind: KindIdleConnClosed, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		wantDescribed(t, h, Scope{}, c.says...)
		if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "idle connection timeout") {
			t.Errorf("%s: recommendations %v", c.name, recs)
		}
	}
	ch := &Finding{Kind: KindInfraChange, Facts: map[string]string{"description": change.Description}}
	dep := &Finding{Kind: KindDeploy, Facts: map[string]string{"description": deploy.Description}}
	if !idleConnClosed.fitsChange(nil, ch) || idleConnClosed.fitsChange(nil, dep) {
		t.Errorf("the keep-alive cut must fit and the rates deploy must not")
	}
}
