package analyst

import (
	"strings"
	"testing"
	"time"
)

// A client that waits its connect timeout on a dead first server before
// failing over, as a JNDI LDAP pool, a Go client's structured log and a
// Java pool's log say it: the failed server and the next are read, the
// caller's earlier latency dates the onset, a change that retires the
// server names it; a refused connection (no wait) and a timeout with no
// failover are not it.
func TestDetectFailoverWait(t *testing.T) {
	jndi := `2026-11-16T09:05:02.118Z DEBUG [com.example.idm.ldap.LdapOperations] (worker-7) search (uid=jdoe) took 5012 ms on ldap://ldap-b.ops.example.org:389 (previous url ldap://ldap-a.ops.example.org:389 failed: javax.naming.CommunicationException: ldap-a.ops.example.org:389 [Root exception is java.net.SocketTimeoutException: connect timed out])`
	goLog := `time=2026-11-16T09:05:02.118Z level=WARN msg="server ldaps://ad1.corp.example.net:636 unreachable, failing over to ldaps://ad2.corp.example.net:636" took=3.004s err="dial tcp 10.2.0.5:636: i/o timeout"`
	javaPool := `2026-11-16 09:05:02,118 WARN  [LdapConnectionPool] Failed to connect to ldap://dir01.example.com:389, trying next server ldap://dir02.example.com:389: java.net.SocketTimeoutException: connect timed out`
	refused := `time=2026-11-16T09:05:02.118Z level=WARN msg="server ldaps://ad1.corp.example.net:636 unreachable, failing over to ldaps://ad2.corp.example.net:636" err="dial tcp 10.2.0.5:636: connect: connection refused"`
	fallback := `{"time":"2026-11-16T09:05:02.118Z","level":"ERROR","msg":"fraud score failed, falling back to rules","error":"dial tcp: lookup rules-api.risk.svc on 10.96.0.10:53: i/o timeout"}`
	noFailover := `2026-11-16T09:05:02.118Z ERROR ldap search failed: dial tcp 10.2.0.5:636: i/o timeout`
	cases := []struct {
		name, line         string
		failed, next, wait string // failed "": no finding
		change             string // a change that retires the server, named
	}{
		{"JNDI pool, previous url failed", jndi, "ldap://ldap-a.ops.example.org:389", "ldap://ldap-b.ops.example.org:389", "5.01 s", "power off ldap-a (replaced by ldap-b)"},
		{"Go client, structured", goLog, "ldaps://ad1.corp.example.net:636", "ldaps://ad2.corp.example.net:636", "3.00 s", "CHG-1042: decommission domain controller ad1.corp.example.net"},
		{"Java pool, trying next server", javaPool, "ldap://dir01.example.com:389", "ldap://dir02.example.com:389", "", "retire dir01 (Windows Server 2012)"},
		{"a refused connection costs no wait", refused, "", "", "", ""},
		{"a timeout with no failover", noFailover, "", "", "", ""},
		{"a feature falling back is no server failover", fallback, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			latency := Finding{Kind: KindLatency, Source: SrcMetrics, Time: win.Start.Add(-30 * time.Minute), Summary: "latency of - rose from 200 ms to 5.2 s"}
			ev := &Gathered{Logs: []LogSet{minedSet("sso", false, 20*time.Minute, c.line, c.line, c.line)}, Window: win, Scope: Scope{Service: "sso"}}
			fs := detectFailoverWait(ev, []Finding{latency})
			if c.failed == "" {
				if len(fs) != 0 {
					t.Fatalf("finding for %q: %+v", c.line, fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			f := fs[0]
			if f.fact("failed") != c.failed || f.fact("next") != c.next || f.fact("waited") != c.wait {
				t.Errorf("failed %q next %q waited %q", f.fact("failed"), f.fact("next"), f.fact("waited"))
			}
			if !f.Time.Equal(latency.Time) || f.fact("latency_from") == "" {
				t.Errorf("onset %v, want the latency's %v", f.Time, latency.Time)
			}
			if got := DependencyTarget(c.line); !strings.Contains(c.failed, got) {
				t.Errorf("dependency target %q, want the failed server %q", got, c.failed)
			}
			h := &Hypothesis{Kind: KindFailoverWait, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.failed, "connect timed out", "fails over to", "not overloaded")
			ch := &Finding{Kind: KindInfraChange, Subject: "directory", Summary: "infrastructure change of directory: " + c.change}
			if !namesCause(h, ch) {
				t.Errorf("change %q does not name the failed server (%s)", c.change, f.fact("failed_server"))
			}
			other := &Finding{Kind: KindConfigChange, Subject: "sso", Summary: "config change of sso: enable DEBUG logging"}
			if namesCause(h, other) || fitsMechanism(h, other) {
				t.Errorf("a log level change taken for the server's removal")
			}
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, c.failed) {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
