package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestServerPoolHeld reads a web server whose every worker is busy — in
// Apache's error log (AH00161, and MaxClients before 2.4), php-fpm's
// max_children warning, apachectl status with 0 idle workers — while its
// calls to one dependency time out: the workers are held by those calls.
// Without the timeouts, or without the pool full, nothing is added.
func TestServerPoolHeld(t *testing.T) {
	timeout := Finding{Kind: KindTimeout, Subject: "api.carrier.example", Weight: 0.8, Time: now, Summary: "web-app logs timeouts to api.carrier.example"}
	timeout.setFact("caller", "web-app")
	timeout.setFact("line", `2026-03-14T12:10:03Z web-02 app.WARNING: quote failed {"duration_s":31.3,"error":"cURL error 28: Operation timed out after 30001 milliseconds"}`)
	cmd := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Host: "web-01", Lines: lines}
	}
	apache := cmd("sudo tail -n 3 /var/log/apache2/error.log", "[Sat Mar 14 12:10:41.552301 2026] [mpm_prefork:error] [pid 1022] AH00161: server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting")
	apache22 := cmd("tail /var/log/httpd/error_log", "[Sat Mar 14 12:10:41 2026] [error] server reached MaxClients setting, consider raising the MaxClients setting")
	fpm := cmd("tail -n 2 /var/log/php8.2-fpm.log", "[14-Mar-2026 12:10:41] WARNING: [pool www] server reached pm.max_children setting (50), consider raising it")
	status := cmd("apachectl status", "   150 requests currently being processed, 0 idle workers")
	for name, c := range map[string]struct {
		cmds []evidence.CommandOutput
		want []string
	}{
		"Apache 2.4 with its status": {[]evidence.CommandOutput{apache, status}, []string{"AH00161", "150 requests currently being processed, 0 idle workers", "calls to api.carrier.example that time out"}},
		"Apache 2.2":                 {[]evidence.CommandOutput{apache22}, []string{"MaxClients"}},
		"php-fpm":                    {[]evidence.CommandOutput{fpm}, []string{"pm.max_children setting (50)"}},
	} {
		t.Run(name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "shop"}}
			fs := detectServerPoolHeld(ev, []Finding{timeout})
			if len(fs) != 1 || fs[0].Subject != "shop" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindWorkerPool, Subject: "shop", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, ev.Scope, c.want...)
			if recs := recommend(h, ev.Scope); len(recs) == 0 || !strings.Contains(recs[0].Action, "short timeout") {
				t.Errorf("recommendations %+v", recs)
			}
			if !strictTrigger(h) {
				t.Error("the server's own release would trigger it")
			}
		})
	}
	if fs := detectServerPoolHeld(&Gathered{Commands: []evidence.CommandOutput{apache}, Window: win, Scope: Scope{Service: "shop"}}, nil); len(fs) != 0 {
		t.Errorf("no timeouts: %+v", fs)
	}
	if fs := detectServerPoolHeld(&Gathered{Commands: []evidence.CommandOutput{cmd("uptime", " 12:46:12 up 63 days")}, Window: win, Scope: Scope{Service: "shop"}}, []Finding{timeout}); len(fs) != 0 {
		t.Errorf("no pool full: %+v", fs)
	}
}
