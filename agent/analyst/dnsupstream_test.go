package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestUpstreamFailureLines reads the failed forwards of several DNS
// servers' own logs, and not a cluster name or a client's line.
func TestUpstreamFailureLines(t *testing.T) {
	for _, c := range []struct{ line, name, upstream string }{
		{`[ERROR] plugin/errors: 2 ldap.corp.internal. A: read udp 10.0.3.17:48211->10.40.0.10:53: i/o timeout`, "ldap.corp.internal", "10.40.0.10"},
		{`2026-05-12T08:01:02.117Z [ERROR] plugin/errors: 2 vault.dc1.example.com. AAAA: dial udp 172.16.8.2:53: connect: no route to host`, "vault.dc1.example.com", "172.16.8.2"},
		{`[ERROR] plugin/errors: 2 git.onprem.lan. A: read tcp 10.1.0.5:40022->192.168.10.53:53: read: connection refused`, "", ""},
		{`[ERROR] plugin/errors: 2 git.onprem.lan. A: dial tcp 192.168.10.53:53: connect: connection refused`, "git.onprem.lan", "192.168.10.53"},
		{`12-May-2026 08:02:11.410 timed out resolving 'ad01.corp.example/A/IN': 10.8.0.4#53`, "ad01.corp.example", "10.8.0.4"},
		{`[1715500931] unbound[1:0] error: SERVFAIL <db.corp.internal. A IN>: all the configured stub or forward servers failed, at zone corp.internal.`, "db.corp.internal", "zone corp.internal"},
		// A client's own lookup is not a DNS server's forward.
		{`dial tcp: lookup ldap.corp.internal on 10.100.0.10:53: read udp 10.0.9.4:5000->10.100.0.10:53: i/o timeout`, "", ""},
		{`[INFO] 10.0.9.4:5000 - 1 "A IN ldap.corp.internal. udp 36 false 512" SERVFAIL qr,rd 36 4.003s`, "", ""},
	} {
		name, up := upstreamFailure(c.line)
		if name != c.name || up != c.upstream {
			t.Errorf("%q: name %q upstream %q, want %q %q", c.line, name, up, c.name, c.upstream)
		}
	}
}

func TestCommonZone(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"ldap.corp.internal", "artifactory.corp.internal"}, "corp.internal"},
		{[]string{"ldap.corp.internal"}, "corp.internal"},
		{[]string{"a.dc1.example.com", "b.dc1.example.com", "c.dc1.example.com"}, "dc1.example.com"},
		{[]string{"a.example.com", "b.example.org"}, ""},
	} {
		if got := commonZone(c.names); got != c.want {
			t.Errorf("%v: %q, want %q", c.names, got, c.want)
		}
	}
}

// TestMissingRoute reads several route listings: one that covers none of
// the upstreams is why they are unreachable; a default route or a covering
// prefix is not.
func TestMissingRoute(t *testing.T) {
	tgw := evidence.CommandOutput{Command: "aws ec2 search-transit-gateway-routes --transit-gateway-route-table-id tgw-rtb-0c5e1a9f3b7d2e481 --filters Name=state,Values=active --output table", Lines: []string{
		"|  10.0.0.0/16   |  vpc                    |  tgw-attach-0b1e9d7c5a3f2e684  |  propagated |",
		"|  10.32.0.0/16  |  direct-connect-gateway |  tgw-attach-0f2c7e9a1b5d3c846  |  propagated |"}}
	rtb := evidence.CommandOutput{Command: "aws ec2 describe-route-tables --route-table-ids rtb-0a1b2c3d --query 'RouteTables[].Routes[]' --output text", Lines: []string{
		"10.20.0.0/16\tlocal\tactive", "172.16.0.0/12\tpcx-0f1e2d3c\tactive"}}
	ipRoute := evidence.CommandOutput{Command: "ip route", Lines: []string{"default via 10.0.0.1 dev eth0", "10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.17"}}
	gets := evidence.CommandOutput{Command: "kubectl get pods -o wide", Lines: []string{"api-1 1/1 Running 0 1d 10.0.0.0/16"}}
	for _, c := range []struct {
		name  string
		cmd   evidence.CommandOutput
		addrs []string
		want  string
		table string
	}{
		{"transit gateway without the datacenter's prefix", tgw, []string{"10.40.0.10", "10.40.0.11"}, "no route in transit gateway route table tgw-rtb-0c5e1a9f3b7d2e481 covers 10.40.0.10, 10.40.0.11", "tgw-rtb-0c5e1a9f3b7d2e481"},
		{"transit gateway covering it", tgw, []string{"10.32.1.2"}, "", ""},
		{"VPC route table without it", rtb, []string{"192.168.4.4"}, "no route in route table rtb-0a1b2c3d covers 192.168.4.4", "rtb-0a1b2c3d"},
		{"VPC route table peered to it", rtb, []string{"172.20.1.1"}, "", ""},
		{"host with a default route", ipRoute, []string{"10.40.0.10"}, "", ""},
		{"not a route listing", gets, []string{"10.40.0.10"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, table := missingRoute([]evidence.CommandOutput{c.cmd}, c.addrs)
			if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) || table != c.table {
				t.Errorf("got %q (table %q), want %q (%q)", got, table, c.want, c.table)
			}
		})
	}
}

// TestUpstreamProbe reads dig and nslookup queries of an upstream that got
// no answer, in the forms of several versions.
func TestUpstreamProbe(t *testing.T) {
	for _, c := range []struct {
		name  string
		cmd   evidence.CommandOutput
		found bool
	}{
		{"dig 9.11 timed out", evidence.CommandOutput{Run: "sh", Lines: []string{"# dig @10.40.0.10 ldap.corp.internal +time=2 +tries=1", "", "; <<>> DiG 9.11.6-P1 <<>> @10.40.0.10 ldap.corp.internal +time=2 +tries=1", "; (1 server found)", ";; global options: +cmd", ";; connection timed out; no servers could be reached"}}, true},
		{"dig 9.18 communications error", evidence.CommandOutput{Run: "dig @10.40.0.11 ad.corp.internal", Lines: []string{";; communications error to 10.40.0.11#53: timed out", ";; communications error to 10.40.0.11#53: timed out", ";; no servers could be reached"}}, true},
		{"nslookup timed out", evidence.CommandOutput{Run: "nslookup ldap.corp.internal 10.40.0.10", Lines: []string{";; connection timed out; no servers could be reached"}}, true},
		{"dig of the upstream answered", evidence.CommandOutput{Run: "dig @10.40.0.10 ldap.corp.internal +short", Lines: []string{"10.40.3.21"}}, false},
		{"another server timed out", evidence.CommandOutput{Run: "dig @8.8.8.8 example.com", Lines: []string{";; connection timed out; no servers could be reached"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := upstreamProbe([]evidence.CommandOutput{c.cmd}, []string{"10.40.0.10", "10.40.0.11"}); (got != "") != c.found {
				t.Errorf("probe %q, want found %v", got, c.found)
			}
		})
	}
}

// TestDetectDNSUpstream follows a forwarded zone's failures from the DNS
// server's log to the callers, the probe, the route and the change; with
// nothing of why, the finding only states the failure (capped).
func TestDetectDNSUpstream(t *testing.T) {
	coredns := minedSet("coredns", false, 30*time.Minute,
		`[ERROR] plugin/errors: 2 ldap.corp.internal. A: read udp 10.0.3.17:48211->10.40.0.10:53: i/o timeout`,
		`[ERROR] plugin/errors: 2 artifactory.corp.internal. AAAA: read udp 10.0.3.17:39502->10.40.0.11:53: i/o timeout`)
	coredns.Namespace = "kube-system"
	clusterOnly := minedSet("coredns", false, 0, `[ERROR] plugin/errors: 2 pricing.travel.svc.cluster.local. AAAA: read udp 10.40.11.249:52973->10.40.0.2:53: i/o timeout`)
	caller := minedSet("ldap-sync", false, 0,
		`2026-05-12 08:36:02,118 INFO ldap_sync starting: source=ldaps://ldap.corp.internal:636`,
		`ldap3.core.exceptions.LDAPSocketOpenError: socket connection error while opening: [Errno -3] Temporary failure in name resolution`)
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ldap-sync-29642880", Namespace: "identity", CreationTimestamp: metav1.NewTime(win.Start.Add(10 * time.Minute))},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}
	probe := evidence.CommandOutput{Run: "sh", Lines: []string{"; <<>> DiG 9.11.6-P1 <<>> @10.40.0.10 ldap.corp.internal", ";; connection timed out; no servers could be reached"}}
	routes := evidence.CommandOutput{Command: "aws ec2 search-transit-gateway-routes --transit-gateway-route-table-id tgw-rtb-0c5e1a9f3b7d2e481", Lines: []string{"|  10.0.0.0/16   |  vpc  |", "|  10.32.0.0/16  |  direct-connect-gateway |"}}
	change := evidence.Change{Timestamp: win.Start.Add(5 * time.Minute), Service: "network", Kind: "infra", Description: "terraform apply network/prod: drop propagation from vpn attachment tgw-attach-07d3"}
	for _, c := range []struct {
		name      string
		g         Gathered
		subject   string
		why       bool
		stateOnly bool
	}{
		{"log, probe and route", Gathered{Logs: []LogSet{coredns, caller}, K8s: K8sEvidence{Jobs: []batchv1.Job{job}}, Commands: []evidence.CommandOutput{probe, routes}, Window: win}, "coredns", true, false},
		{"log and the network change", Gathered{Logs: []LogSet{coredns, caller}, K8s: K8sEvidence{Jobs: []batchv1.Job{job}}, Changes: []evidence.Change{change}, Window: win}, "coredns", false, false},
		{"log alone", Gathered{Logs: []LogSet{coredns, caller}, Window: win}, "coredns", false, true},
		{"a cluster name is not a forwarded zone", Gathered{Logs: []LogSet{clusterOnly, caller}, Window: win}, "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectDNSUpstream(&c.g, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("zone") != "corp.internal" || f.fact("upstreams") != "10.40.0.10, 10.40.0.11" || f.fact("callers") != "ldap-sync" {
				t.Errorf("facts %v", f.Facts)
			}
			if (f.fact("why") != "") != c.why || (f.fact("state_only") != "") != c.stateOnly {
				t.Errorf("why %q state_only %q", f.fact("why"), f.fact("state_only"))
			}
			if len(c.g.K8s.Jobs) > 0 && !f.Time.Equal(job.CreationTimestamp.Time) {
				t.Errorf("onset %v, want the first failed run's %v", f.Time, job.CreationTimestamp.Time)
			}
			h := &Hypothesis{Kind: KindDNSUpstream, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "10.40.0.10", "corp.internal", "ldap-sync", "unreachable")
			if !dnsUpstream.related(h, &Finding{Kind: KindJobFailed, Subject: "ldap-sync", Facts: map[string]string{"line_kind": string(KindDNS)}}) ||
				dnsUpstream.related(h, &Finding{Kind: KindJobFailed, Subject: "billing"}) {
				t.Error("related: the caller's failed Job is, another's is not")
			}
		})
	}
}

// TestJobFailedOnLookupIsStateOnly: a Job whose log says only that a name
// did not resolve is one hop short of why.
func TestJobFailedOnLookupIsStateOnly(t *testing.T) {
	j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ldap-sync-1", Namespace: "identity", CreationTimestamp: metav1.NewTime(win.Start)},
		Status: batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: metav1.NewTime(win.Start.Add(time.Minute))}}}}
	set := minedSet("ldap-sync", false, 0, `ldap3.core.exceptions.LDAPSocketOpenError: socket connection error while opening: [Errno -3] Temporary failure in name resolution`)
	set.Source = "ldap-sync-1-abcde"
	set.Namespace = "identity"
	fs := jobFailed.detect(&Gathered{K8s: K8sEvidence{Jobs: []batchv1.Job{j}}, Logs: []LogSet{set}, Window: win}, nil)
	if len(fs) == 0 {
		t.Fatal("no failed Job")
	}
	for _, f := range fs {
		if Kind(f.fact("line_kind")) == KindDNS && f.fact("state_only") != "true" {
			t.Errorf("a lookup failure is not why: %v", f.Facts)
		}
	}
}

// TestWithoutSearchExpansions: the names a search list made of a name are
// the same lookup, and leave the zone to the name itself.
func TestWithoutSearchExpansions(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"sftp.partner.example.net", "sftp.partner.example.net.ec2.internal"}, "partner.example.net"},
		{[]string{"api.vendor.io", "api.vendor.io.svc.cluster.local", "api.vendor.io.payments.svc.cluster.local"}, "vendor.io"},
		{[]string{"ldap.corp.internal", "artifactory.corp.internal"}, "corp.internal"},
		{[]string{"db.example.com.us-central1-a.c.proj.internal", "db.example.com"}, "example.com"},
	} {
		if got := commonZone(withoutSearchExpansions(c.names)); got != c.want {
			t.Errorf("%v: %q, want %q", c.names, got, c.want)
		}
	}
}

// TestAuthoritativeProbe reads the zone's name servers listed and a query
// sent straight to one of them that got no answer, in dig's short and full
// forms; a name server that answers, or one never listed, is not one.
func TestAuthoritativeProbe(t *testing.T) {
	short := evidence.CommandOutput{Run: "sh -c 'dig +short NS partner.example.net @1.1.1.1; dig +time=2 +tries=1 files.partner.example.net @ns2.pdns-host.net'", Lines: []string{
		"ns1.pdns-host.net.", "ns2.pdns-host.net.", ";; communications error to 203.0.113.9#53: timed out", ";; no servers could be reached"}}
	full := evidence.CommandOutput{Run: "dig @dns-a.partner-dns.com files.partner.example.net", Lines: []string{
		";; ANSWER SECTION:", "partner.example.net.\t3600\tIN\tNS\tdns-a.partner-dns.com.",
		"; <<>> DiG 9.18.24 <<>> @dns-a.partner-dns.com files.partner.example.net", ";; connection timed out; no servers could be reached"}}
	answers := evidence.CommandOutput{Run: "sh -c 'dig +short NS partner.example.net; dig files.partner.example.net @ns1.pdns-host.net +short'", Lines: []string{"ns1.pdns-host.net.", "203.0.113.40"}}
	unlisted := evidence.CommandOutput{Run: "dig files.partner.example.net @resolver.corp.example", Lines: []string{";; connection timed out; no servers could be reached"}}
	for _, c := range []struct {
		name string
		cmd  evidence.CommandOutput
		want string
	}{
		{"dig +short NS then a timed-out query", short, "ns2.pdns-host.net"},
		{"full answer section", full, "dns-a.partner-dns.com"},
		{"the name server answers", answers, ""},
		{"a server not listed as the zone's", unlisted, ""},
	} {
		if got, _ := authoritativeProbe([]evidence.CommandOutput{c.cmd}, "partner.example.net", []string{"files.partner.example.net"}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestUpstreamCallerFromWorkloadLogs: the logs of a Job kubectl printed
// without naming its pod (kept as text) make its CronJob a caller, and the
// CronJob's failed runs the onset; a zone's own name servers not answering
// is said instead of a broken path to the resolvers.
func TestUpstreamCallerFromWorkloadLogs(t *testing.T) {
	coredns := minedSet("coredns", false, 30*time.Minute,
		`[ERROR] plugin/errors: 2 files.partner.example.net. A: read udp 10.0.18.41:52744->10.0.0.2:53: i/o timeout`,
		`[ERROR] plugin/errors: 2 files.partner.example.net.ec2.internal. AAAA: read udp 10.0.18.41:52745->10.0.0.2:53: i/o timeout`)
	coredns.Namespace = "kube-system"
	for _, lines := range [][]string{
		{"ssh: Could not resolve hostname files.partner.example.net: Temporary failure in name resolution"},
		{`{"level":"error","msg":"upload failed","error":"dial tcp: lookup files.partner.example.net on 172.20.0.10:53: server misbehaving"}`, "getaddrinfo EAI_AGAIN files.partner.example.net"},
	} {
		logs := evidence.CommandOutput{Command: "kubectl -n analytics logs job/partner-sync-29913935 --tail=4", Run: "kubectl -n analytics logs job/partner-sync-29913935 --tail=4", Namespace: "analytics", Target: "job/partner-sync-29913935", Lines: lines}
		failed := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "partner-sync-29913930", Namespace: "analytics", CreationTimestamp: metav1.NewTime(win.Start.Add(10 * time.Minute))},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}
		probe := evidence.CommandOutput{Run: "sh -c 'dig +short NS partner.example.net @8.8.8.8; dig +time=3 files.partner.example.net @ns1.pdns-host.net | tail -2'", Lines: []string{"ns1.pdns-host.net.", ";; communications error to 198.51.100.53#53: timed out", ";; no servers could be reached"}}
		f := onlyFinding(t, detectDNSUpstream(&Gathered{Logs: []LogSet{coredns}, K8s: K8sEvidence{Jobs: []batchv1.Job{failed}}, Commands: []evidence.CommandOutput{logs, probe}, Window: win}, nil), "coredns")
		if f == nil {
			return
		}
		if f.fact("callers") != "partner-sync" || f.fact("zone") != "partner.example.net" || f.fact("authoritative") != "ns1.pdns-host.net" || !f.Time.Equal(failed.CreationTimestamp.Time) {
			t.Errorf("facts %v onset %v", f.Facts, f.Time)
		}
		h := &Hypothesis{Kind: KindDNSUpstream, Subject: f.Subject, Primary: []*Finding{f}}
		wantDescribed(t, h, Scope{}, "ns1.pdns-host.net", "SERVFAIL", "partner-sync", "outside the cluster")
	}
}
