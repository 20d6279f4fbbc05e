package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDNSReloadFailed: forwards failing to resolvers the DNS server's
// configuration no longer names, after a reload of that configuration was
// rejected (CoreDNS's reload plugin, before the window or in a command's
// output; BIND's named.conf forwarders), are the old configuration still
// running: the answer names the reload and its reason. A configuration
// that names the failing resolvers, or no rejected reload, is the plain
// unreachable upstream.
func TestDNSReloadFailed(t *testing.T) {
	coredns := minedSet("coredns", false, 30*time.Minute,
		`[ERROR] plugin/errors: 2 ldap.corp.internal. A: read udp 10.0.3.17:48211->10.40.0.10:53: i/o timeout`,
		`[ERROR] plugin/errors: 2 artifactory.corp.internal. AAAA: read udp 10.0.3.17:39502->10.40.0.11:53: i/o timeout`)
	coredns.Namespace = "kube-system"
	corefile := func(dests string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl -n kube-system get configmap coredns -o jsonpath='{.data.Corefile}' | cat -n", Lines: []string{
			"     1\t.:53 {", "     2\t    errors", "     3\t    forward . /etc/resolv.conf", "     4\t}",
			"     5\tcorp.internal:53 {", "     6\t    errors", "     7\t    forward . " + dests + " {", "     8\t        max_fail 2", "     9\t    }", "    10\t}"}}
	}
	named := evidence.CommandOutput{Command: "cat /etc/bind/named.conf.local", Lines: []string{`zone "corp.internal" { type forward; forward only; forwarders { 10.52.0.10; 10.52.0.11; }; };`}}
	corednsReload := evidence.LogLine{Time: win.Start.Add(-5 * time.Hour), Source: "coredns-6f9c8b7d5c-8xq4z/coredns",
		Text: `[ERROR] Corefile changed but reload failed: plugin/forward: Corefile:8 - Error during parsing: unknown property 'max_fail'`}
	bindReload := evidence.CommandOutput{Command: "rndc reload", Lines: []string{"rndc: 'reload' failed: unexpected token"}}
	for _, c := range []struct {
		name   string
		g      Gathered
		reload bool
	}{
		{"CoreDNS repointed, reload rejected before the window", Gathered{Logs: []LogSet{coredns}, Commands: []evidence.CommandOutput{corefile("10.52.0.10 10.52.0.11")}, RejectedReloads: []evidence.LogLine{corednsReload}, Window: win}, true},
		{"BIND forwarders, rndc reload failed", Gathered{Logs: []LogSet{coredns}, Commands: []evidence.CommandOutput{named, bindReload}, Window: win}, true},
		{"the configuration names the failing ones", Gathered{Logs: []LogSet{coredns}, Commands: []evidence.CommandOutput{corefile("10.40.0.10 10.40.0.11")}, RejectedReloads: []evidence.LogLine{corednsReload}, Window: win}, false},
		{"no reload rejected", Gathered{Logs: []LogSet{coredns}, Commands: []evidence.CommandOutput{corefile("10.52.0.10 10.52.0.11")}, Window: win}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectDNSUpstream(&c.g, nil), "coredns")
			if f == nil {
				return
			}
			if got := f.fact("reload_failed") != ""; got != c.reload {
				t.Fatalf("reload_failed %q, want %v", f.fact("reload_failed"), c.reload)
			}
			h := &Hypothesis{Kind: KindDNSUpstream, Subject: f.Subject, Primary: []*Finding{f}}
			if c.reload {
				wantDescribed(t, h, Scope{}, "10.40.0.10", "forwards corp.internal to 10.52.0.10 10.52.0.11", "reload of it failed", "rejected reload")
			} else {
				wantDescribed(t, h, Scope{}, "10.40.0.10", "unreachable")
			}
		})
	}
}
