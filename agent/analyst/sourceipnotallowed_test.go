package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A provider refusing the caller's source address, as real services word
// it (a partner API's JSON error, Azure SQL's firewall, Snowflake's
// network policy, GitHub's IP allow list, MongoDB Atlas' access list),
// with the outbound address a pod sees, a Cloud NAT on automatic
// addresses, static addresses left reserved and the NAT change read; a
// refused API key is not one.
func TestDetectSourceIPNotAllowed(t *testing.T) {
	nat := evidence.CommandOutput{Command: "gcloud compute routers nats describe nat-prod --router=router-prod --region=europe-west4", Lines: []string{
		"enableEndpointIndependentMapping: false", "name: nat-prod", "natIpAllocateOption: AUTO_ONLY", "sourceSubnetworkIpRangesToNat: ALL_SUBNETWORKS_ALL_IP_RANGES"}}
	addrs := evidence.CommandOutput{Command: `gcloud compute addresses list --filter="region:europe-west4"`, Lines: []string{
		"NAME              ADDRESS/RANGE   TYPE      PURPOSE  NETWORK  REGION        SUBNET  STATUS",
		"nat-auto-ip-1     34.141.70.9     EXTERNAL  NAT               europe-west4          IN_USE",
		"egress-static-1   35.204.80.1     EXTERNAL                    europe-west4          RESERVED"}}
	echo := evidence.CommandOutput{Command: "kubectl -n pay exec deploy/api -- curl -s https://ifconfig.me", Exec: true, Run: "curl -s https://ifconfig.me", Lines: []string{"34.141.70.9"}}
	natChange := evidence.Change{Timestamp: win.Start.Add(-20 * time.Minute), Service: "network-prod", Kind: "infra", Description: "terraform apply: cloud-nat module 5.3.0 -> 6.0.0"}
	cases := []struct {
		name, line string
		cmds       []evidence.CommandOutput
		ip         string
		want       []string
	}{
		{"partner API JSON error", `{"level":"ERROR","msg":"submit failed","status":403,"body":"{\"error\":{\"code\":\"IP_NOT_ALLOWED\",\"message\":\"Source IP 34.141.70.9 is not on the allowlist for client acme\"}}","url":"https://api.bank.example/v2/payments"}`,
			[]evidence.CommandOutput{nat, addrs, echo}, "34.141.70.9", []string{"34.141.70.9", "AUTO_ONLY", "egress-static-1 (35.204.80.1)", "cloud-nat module", "api.bank.example"}},
		{"Azure SQL firewall", `2026-11-20 10:00:01 ERROR Login failed: Cannot open server 'acme-sql' requested by the login. Client with IP address '20.50.3.7' is not allowed to access the server.  To enable access, use the Azure Management Portal.`,
			nil, "20.50.3.7", []string{"20.50.3.7", "allowlist"}},
		{"Snowflake network policy", `snowflake.connector.errors.DatabaseError: 250001 (08001): Failed to connect to DB: acme.snowflakecomputing.com:443. IP 52.14.9.200 is not allowed to access Snowflake.  Contact your local security administrator.`,
			nil, "52.14.9.200", []string{"52.14.9.200"}},
		{"GitHub IP allow list", `level=error msg="sync failed" err="GET https://api.github.com/orgs/acme/repos: 403 Although you appear to have the correct authorization credentials, the ` + "`acme`" + ` organization has an IP allow list enabled, and 3.120.1.4 is not permitted to access this resource."`,
			nil, "3.120.1.4", []string{"3.120.1.4", "api.github.com"}},
		{"MongoDB Atlas access list", `ERROR atlas api call failed: 403 (request "IP_ADDRESS_NOT_ON_ACCESS_LIST") IP address 18.200.1.2 is not allowed to access this resource.`,
			nil, "18.200.1.2", []string{"18.200.1.2"}},
		{"an API key refused", `ERROR provider call failed status=403 body="{\"error\":\"invalid api key\"}"`, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("caller", false, 0, c.line, c.line)}, Commands: c.cmds, Changes: []evidence.Change{natChange}, Window: win}
			want := ""
			if c.want != nil {
				want = "caller"
			}
			f := onlyFinding(t, detectSourceIPNotAllowed(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("source_ip") != c.ip {
				t.Errorf("source ip %q, want %q", f.fact("source_ip"), c.ip)
			}
			h := &Hypothesis{Kind: KindSourceIPNotAllowed, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, append([]string{"source IP", "caller"}, c.want...)...)
		})
	}
}
