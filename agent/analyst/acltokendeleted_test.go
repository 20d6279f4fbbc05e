package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestACLTokenDeleted reads a client refused by Consul because its token
// no longer exists: consul-template's retried kv.list, a Consul client
// agent's coordinate updates, an application's Go API client; the
// servers' lines that deleted and recreated the token of the client's
// description, and the Terraform change that replaced the tokens. A token
// that exists but lacks a permission is not it.
func TestACLTokenDeleted(t *testing.T) {
	ct := []string{`2026-03-14T09:40:08.750Z [INFO] consul-template v0.39.1 (a8d7f6e)`,
		`2026-03-14T09:41:08.750Z [WARN] (view) kv.list(pricing/surcharges): Unexpected response code: 403 (ACL not found) (retry attempt 1313 after "1m0s")`}
	agent := []string{`2026-03-14T09:41:08.750Z [ERROR] agent: Coordinate update error: error="ACL not found"`}
	goAPI := []string{`time="2026-03-14T09:41:08Z" level=error msg="reading flags from consul" err="Unexpected response code: 403 (ACL not found)"`}
	server := []string{
		`2026-03-14T09:35:38.000Z [DEBUG] agent.server.acl: deleting token: accessor=7c2e91d4 description="rates-api (k8s sidecar)"`,
		`2026-03-14T09:35:40.000Z [DEBUG] agent.server.acl: created token: accessor=e4b0a7f2 description="rates-api (k8s sidecar)"`}
	tf := evidence.Change{Timestamp: win.Start.Add(-10 * time.Minute), Service: "consul", Kind: "infra", Description: "terraform apply infra/consul-acl: remove unused tokens (PR #318)"}
	denied := []string{`2026-03-14T09:41:08.750Z [WARN] (view) kv.list(pricing/x): Unexpected response code: 403 (Permission denied: token with AccessorID 'e4b0a7f2' lacks permission 'key:read' on "pricing/x")`}
	cases := []struct {
		name  string
		lines []string
		host  []string
		ch    []evidence.Change
		want  bool
		says  []string
	}{
		{"consul-template retrying, the servers recreated the token, a Terraform apply", ct, server, []evidence.Change{tf},
			true, []string{"403 (ACL not found)", "consul-template only warns and retries", "created a new one of the same description (rates-api (k8s sidecar))", "terraform apply infra/consul-acl"}},
		{"a Consul client agent's coordinate updates", agent, nil, nil, true, []string{"Coordinate update error"}},
		{"an application's Go API client", goAPI, nil, nil, true, []string{"no longer exists"}},
		{"a token that lacks a permission", denied, nil, nil, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sets := []LogSet{minedSet("rates-api", false, 0, c.lines...)}
			if c.host != nil {
				sets = append(sets, minedSet("consul-server-1", true, -5*time.Minute, c.host...))
			}
			ev := Gathered{Window: win, Logs: sets, Earlier: c.ch}
			f, ok := oneFinding(t, detectACLTokenDeleted(&ev), c.want)
			if !ok {
				return
			}
			if f.Subject != "rates-api" {
				t.Errorf("subject %q, want rates-api", f.Subject)
			}
			checkWritten(t, aclTokenDeleted, &f, "Write the new token's SecretID", append([]string{"Consul ACL token no longer exists"}, c.says...)...)
		})
	}
}
