package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFlow drives the configuration service through the real binary:
// org defaults, a group and a team override over HTTP and the CLI, the
// merge rules, the audit, invalid input, tenant isolation, approvals
// through the CLI on the socket, and persistence across a restart.
func TestConfigFlow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir)
	admin := "Bearer " + issue(t, dir, "--admin", "--name", "ops")
	mustCLI(t, dir, "node", "add", "platform", "--parent", "default", "--kind", "group")
	mustCLI(t, dir, "node", "add", "payments", "--parent", "platform", "--kind", "team")
	mustCLI(t, dir, "node", "add", "search", "--parent", "default", "--kind", "team")
	teamTok := issue(t, dir, "--team", "payments", "--write")
	team := "Bearer " + teamTok
	search := "Bearer " + issue(t, dir, "--team", "search", "--write")
	remote := []string{"--url", srv.url, "--token", teamTok}

	mustOK := func(r *response, status int) map[string]any {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
		}
		return r.body
	}
	compact := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	writeFile := func(name, body string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cliJSON := func(args ...string) map[string]any {
		t.Helper()
		out := mustCLI(t, dir, args...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("rootcause %v printed non-JSON %q", args, out)
		}
		return m
	}

	mustOK(call(t, "PUT", srv.url+"/api/v1/admin/nodes/default/config", admin,
		map[string]any{"slack_channel": "#incidents", "alerts": map[string]any{"disabled": []string{"a", "b"}},
			"agents": map[string]any{"k8s_agent": map[string]any{"timeout": 300}}}), 200)
	mustOK(call(t, "PUT", srv.url+"/api/v1/admin/nodes/platform/config", admin,
		map[string]any{"agents": map[string]any{"k8s_agent": map[string]any{"disable_default_tools": []string{"get_events"}}}}), 200)
	set := cliJSON(append([]string{"config", "set", writeFile("team.json",
		`{"slack_channel":"#payments","alerts":{"disabled":["c"]},"agents":{"k8s_agent":{"timeout":60}}}`)}, remote...)...)
	if set["version"] != 1.0 || compact(set["changed_fields"]) != `["agents.k8s_agent.timeout","alerts.disabled","slack_channel"]` {
		t.Fatalf("config set printed %v", set)
	}
	want := `{"agents":{"k8s_agent":{"disable_default_tools":["get_events"],"timeout":60}},"alerts":{"disabled":["c"]},"org_id":"default","slack_channel":"#payments","team_name":"payments","team_node_id":"payments"}`
	if got := compact(cliJSON(append([]string{"config", "effective"}, remote...)...)); got != want {
		t.Fatalf("effective\n got %s\nwant %s", got, want)
	}
	// Through the socket (local admin) the team is named.
	if got := compact(cliJSON("config", "effective", "--team", "payments")); got != want {
		t.Fatalf("effective over the socket %s", got)
	}
	raw := cliJSON(append([]string{"config", "raw"}, remote...)...)
	if compact(raw["lineage"]) != `["default","platform","payments"]` ||
		compact(raw["configs"].(map[string]any)["platform"]) != `{"agents":{"k8s_agent":{"disable_default_tools":["get_events"]}}}` {
		t.Fatalf("raw %v", raw)
	}
	// null restores the inherited value.
	mustOK(call(t, "PUT", srv.url+"/api/v1/config/me", team, map[string]any{"slack_channel": nil}), 200)
	eff := mustOK(call(t, "GET", srv.url+"/api/v1/config/me/effective", team, nil), 200)
	if eff["slack_channel"] != "#incidents" || compact(eff["alerts"]) != `{"disabled":["c"]}` {
		t.Fatalf("after null: %v", eff)
	}
	audit := cliJSON(append([]string{"config", "audit", "--limit", "1", "--no-full"}, remote...)...)
	hist := audit["history"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["version"] != 2.0 || hist[0].(map[string]any)["full_config"] != nil ||
		compact(hist[0].(map[string]any)["diff"]) != `{"slack_channel":{"new":null,"old":"#payments"}}` {
		t.Fatalf("audit %v", audit)
	}

	// Invalid input: status and code, and the version does not move.
	for body, code := range map[string]string{
		`{"team_name":"x"}`:                       "invalid_field",
		`{"agents":{"k8s_agent":{"timeout":0}}}`:  "validation_error",
		`{"oidc":{"issuer":"https://x.example"}}`: "validation_error",
		`{"unknown_key":1}`:                       "validation_error",
	} {
		var v any
		_ = json.Unmarshal([]byte(body), &v)
		r := call(t, "PUT", srv.url+"/api/v1/config/me", team, v)
		if r.status != 400 || r.errorCode() != code {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	_, errOut, code := cli(t, dir, append([]string{"config", "set", writeFile("bad.json", `{"org_id":"x"}`)}, remote...)...)
	if code == 0 || strings.Contains(errOut, "{") || !strings.Contains(errOut, "org_id") {
		t.Fatalf("config set of an immutable field: exit %d, stderr %q", code, errOut)
	}
	teams := mustOK(call(t, "GET", srv.url+"/api/v1/admin/teams", admin, nil), 200)
	if !strings.Contains(compact(teams), `"name":"payments","parent":"platform","version":2`) {
		t.Fatalf("teams %v", teams)
	}

	// Tenant isolation.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/config/me/effective?team=payments"},
		{"GET", "/api/v1/config/me/audit?team=payments"},
		{"PUT", "/api/v1/admin/nodes/default/config"},
		{"GET", "/api/v1/admin/nodes/payments/config"},
	} {
		var body any
		if r.method == "PUT" {
			body = map[string]any{"slack_channel": "#x"}
		}
		if got := call(t, r.method, srv.url+r.path, search, body); got.status != 403 {
			t.Errorf("%s %s with another team's token: %d", r.method, r.path, got.status)
		}
	}

	// Approvals.
	mustOK(call(t, "PUT", srv.url+"/api/v1/admin/nodes/default/config", admin,
		map[string]any{"approvers": []string{"lead@example.com"}, "feature_flags": map[string]any{"require_approval": true}}), 200)
	cr := cliJSON(append([]string{"config", "set", writeFile("p.json", `{"slack_channel":"#approved"}`)}, remote...)...)
	id, _ := cr["change_request_id"].(string)
	if cr["status"] != "pending_approval" || id == "" {
		t.Fatalf("set under approval printed %v", cr)
	}
	pending := cliJSON(append([]string{"config", "pending"}, remote...)...)["change_requests"].([]any)
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	if r := call(t, "POST", srv.url+"/api/v1/admin/change-requests/"+id+"/approve", team, nil); r.status != 403 {
		t.Fatalf("team token approving: %d", r.status)
	}
	approved := cliJSON("config", "approve", id)
	if approved["status"] != "applied" || approved["version"] != 3.0 {
		t.Fatalf("approve printed %v", approved)
	}
	cr = cliJSON(append([]string{"config", "set", writeFile("q.json", `{"slack_channel":"#rejected"}`)}, remote...)...)
	rejected := cliJSON("config", "reject", cr["change_request_id"].(string), "--reason", "no")
	if rejected["status"] != "rejected" {
		t.Fatalf("reject printed %v", rejected)
	}

	// Everything survives a restart.
	srv.stop()
	srv = startServer(t, dir)
	eff = mustOK(call(t, "GET", srv.url+"/api/v1/config/me/effective", team, nil), 200)
	if eff["slack_channel"] != "#approved" {
		t.Fatalf("after restart: %v", eff)
	}
	hist = mustOK(call(t, "GET", srv.url+"/api/v1/config/me/audit", team, nil), 200)["history"].([]any)
	events := []string{}
	for _, e := range hist {
		events = append(events, e.(map[string]any)["event"].(string))
	}
	if strings.Join(events, ",") != "rejected,submitted,applied,submitted,applied,applied" {
		t.Fatalf("history events %v", events)
	}
	srv.stop()
}
