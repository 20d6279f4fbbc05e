package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDNSNegativeCache pairs dig outputs as an engineer pastes them: the
// cluster's resolver answering NXDOMAIN (full output with its SOA, or the
// SERVER line naming it) while another resolver (a laptop's, the VPC's,
// +short) resolves the same name is a cached denial; both failing, both
// resolving, or other names are not.
func TestDNSNegativeCache(t *testing.T) {
	nxFull := evidence.CommandOutput{Command: "kubectl run -n analytics dnscheck --rm -it --restart=Never --image=nicolaka/netshoot -- dig warehouse.db.internal. @172.20.0.10", Lines: []string{
		";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 5521",
		";; AUTHORITY SECTION:",
		"db.internal.\t\t207\tIN\tSOA\tns-1536.awsdns-00.co.uk. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400",
		";; SERVER: 172.20.0.10#53(172.20.0.10) (UDP)"}}
	nxExec := evidence.CommandOutput{Command: "dig orders-db.prod.example.com", Exec: true, Lines: []string{
		";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 101",
		";; SERVER: 169.254.20.10#53(169.254.20.10) (UDP)"}}
	okLaptop := evidence.CommandOutput{Command: "dig +noall +answer +comments warehouse.db.internal", Lines: []string{
		";; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 40117",
		"warehouse.db.internal.\t60\tIN\tCNAME\tanalytics-prod.c7x2kq9vbm1d.eu-west-1.redshift.amazonaws.com.",
		"analytics-prod.c7x2kq9vbm1d.eu-west-1.redshift.amazonaws.com. 60 IN A 10.60.40.12"}}
	okVPC := evidence.CommandOutput{Command: "dig +noall +answer orders-db.prod.example.com @10.0.0.2", Lines: []string{
		"orders-db.prod.example.com. 300 IN A 10.0.12.7"}}
	nxAlso := evidence.CommandOutput{Command: "dig warehouse.db.internal @8.8.8.8", Lines: []string{";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 9"}}
	okCluster := evidence.CommandOutput{Command: "dig warehouse.db.internal @172.20.0.10", Lines: []string{
		";; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 77", "warehouse.db.internal. 60 IN A 10.60.40.12"}}
	moved := evidence.Change{Timestamp: win.Start, Service: "dns", Kind: "infra", Description: "terraform apply: aws_route53_record.warehouse destroyed and re-created"}
	cases := []struct {
		name         string
		cmds         []evidence.CommandOutput
		name_, at    string
		recordChange bool
	}{
		{"cluster DNS NXDOMAIN with SOA, laptop resolves", []evidence.CommandOutput{nxFull, okLaptop}, "warehouse.db.internal", "172.20.0.10", true},
		{"node-local cache from an exec, VPC resolver resolves", []evidence.CommandOutput{nxExec, okVPC}, "orders-db.prod.example.com", "169.254.20.10", false},
		{"both resolvers deny: the record is gone", []evidence.CommandOutput{nxFull, nxAlso}, "", "", false},
		{"both resolve", []evidence.CommandOutput{okCluster, okLaptop}, "", "", false},
		{"different names", []evidence.CommandOutput{nxFull, okVPC}, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Changes: []evidence.Change{moved}, Window: win, Scope: Scope{Service: "reports-worker"}}
			f, ok := oneFinding(t, detectDNSNegativeCache(ev, nil), c.name_ != "")
			if !ok {
				return
			}
			if f.Subject != "reports-worker" || f.fact("name") != c.name_ || f.fact("cached_at") != c.at || f.fact("why") == "" || (f.fact("record_change") != "") != c.recordChange || len(f.Evidence) < 2 {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			d := dnsNegativeCache.describe(&Hypothesis{Kind: KindDNSNegativeCache, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"NXDOMAIN", "negative cache", c.name_, c.at} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}
