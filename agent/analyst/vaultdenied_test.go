package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Vault read refused by the token's policy, as the Vault Agent's init
// container, the vault CLI in an entrypoint and consul-template log it:
// the path is read across the error's lines; a sealed Vault or a missing
// secret is not a policy refusal.
func TestVaultDeniedFromCrash(t *testing.T) {
	agent := []string{
		`2026-11-26T10:00:49.661Z [INFO]  agent.auth.handler: renewed auth token`,
		`2026-11-26T10:00:49.679Z [WARN]  agent: (view) vault.read(secret/data/payments/stripe): vault.read(secret/data/payments/stripe): Error making API request.`,
		``,
		`URL: GET http://vault.vault.svc:8200/v1/secret/data/payments/stripe`,
		`Code: 403. Errors:`,
		``,
		`* 1 error occurred:`,
		`	* permission denied`,
		`2026-11-26T10:02:52.339Z [ERROR] agent: template server exited with error: exceeded retries`,
	}
	cli := []string{
		`Error reading kv/data/ledger/db: Error making API request.`,
		``,
		`URL: GET https://vault.internal.example:8200/v1/kv/data/ledger/db`,
		`Code: 403. Errors:`,
		``,
		`* permission denied`,
	}
	consulTemplate := []string{
		`2026/11/26 10:00:49.679 [ERR] (view) vault.read(database/creds/reports-ro): vault.read(database/creds/reports-ro): Error making API request. URL: GET https://vault:8200/v1/database/creds/reports-ro Code: 403. Errors: * 1 error occurred: * permission denied`,
	}
	sealed := []string{
		`2026-11-26T10:00:49.679Z [WARN]  agent: (view) vault.read(secret/data/payments/stripe): Error making API request.`,
		`URL: GET http://vault.vault.svc:8200/v1/secret/data/payments/stripe`,
		`Code: 503. Errors:`,
		`* Vault is sealed`,
	}
	cases := []struct {
		name  string
		lines []string
		path  string // "" for no finding
	}{
		{"Vault Agent init container", agent, "secret/data/payments/stripe"},
		{"vault CLI in an entrypoint", cli, "kv/data/ledger/db"},
		{"consul-template, one line", consulTemplate, "database/creds/reports-ro"},
		{"a sealed Vault is not a policy refusal", sealed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ll []evidence.LogLine
			for _, l := range c.lines {
				ll = append(ll, evidence.LogLine{Text: l})
			}
			cs := &containerState{Status: corev1.ContainerStatus{Name: "vault-agent-init"}, LastLines: ll}
			crash := Finding{Kind: KindCrashLoop, Subject: "payments", Namespace: "pay"}
			f, ok := vaultDeniedFromCrash(crash, cs)
			if c.path == "" {
				if ok {
					t.Fatalf("finding %+v", f)
				}
				return
			}
			if !ok || f.fact("secret") != c.path {
				t.Fatalf("ok %v path %q, want %q", ok, f.fact("secret"), c.path)
			}
			h := &Hypothesis{Kind: KindVaultDenied, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.path, "403 permission denied", "policy")
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, c.path) {
				t.Errorf("recommendations %v", recs)
			}
			// A release that reads the new path names it.
			ch := &Finding{Kind: KindDeploy, Subject: "payments", Summary: "deploy of payments: read credentials from " + c.path + " instead of the per-app copy"}
			if !namesCause(h, ch) {
				t.Errorf("a change naming %s not taken for the cause's", c.path)
			}
		})
	}
}
