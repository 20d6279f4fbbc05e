package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// OIDC test principals, served by approverVerifier.
const (
	jwtLead      = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJsZWFkIn0.c2ln" // OIDC admin, listed approver
	jwtStranger  = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzdHIifQ.c2ln"  // OIDC admin, not an approver
	jwtLeadAsDev = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJkZXYifQ.c2ln"  // the lead's email acting in payments
)

type approverVerifier struct{}

func (approverVerifier) Verify(_ context.Context, raw string) (*Principal, error) {
	admin := []string{db.PermAdminRead, db.PermAdminWrite}
	switch raw {
	case jwtLead:
		return &Principal{ID: "lead-sub", Email: "lead@example.com", Permissions: admin}, nil
	case jwtStranger:
		return &Principal{ID: "stranger-sub", Email: "stranger@example.com", Permissions: admin}, nil
	case jwtLeadAsDev:
		return &Principal{ID: "lead-dev-sub", Email: "Lead@Example.com", Team: "payments", Permissions: []string{db.PermTeamRead, db.PermTeamWrite}}, nil
	}
	return nil, db.Errorf(db.EUNAUTHORIZED, "bad jwt")
}

// configHarness is the harness with rate limits off, an OIDC verifier and
// a tool server "tickets" reporting the tools create_ticket and get_ticket.
func configHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) {
		c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1}
		c.JWTVerifier = approverVerifier{}
		c.ToolServerTools = func(_ context.Context, srv string) ([]string, error) {
			if srv == "tickets" {
				return []string{"create_ticket", "get_ticket"}, nil
			}
			return nil, fmt.Errorf("no tool server %q", srv)
		}
	})
}

// ok sends r and requires status, returning the JSON body.
func (h *harness) ok(r req, status int) map[string]any {
	h.t.Helper()
	resp := h.do(r)
	if resp.status != status {
		h.t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, resp.status, status, resp.body)
	}
	return resp.json(h.t)
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// teamVersion is payments' version as GET /api/v1/admin/teams shows it.
func (h *harness) teamVersion(team string) float64 {
	h.t.Helper()
	m := h.ok(req{path: "/api/v1/admin/teams", token: "admin"}, 200)
	for _, x := range m["teams"].([]any) {
		tm := x.(map[string]any)
		if tm["name"] == team {
			return tm["version"].(float64)
		}
	}
	h.t.Fatalf("team %s not listed", team)
	return 0
}

// TestConfigFlow is the black-box flow: org defaults, a group override, a
// team override; effective and raw per the merge rule; arrays replaced;
// null restoring the inherited value; the audit newest first.
func TestConfigFlow(t *testing.T) {
	h := configHarness(t)
	put := func(path, token, body string) map[string]any {
		t.Helper()
		return h.ok(req{method: "PUT", path: path, token: token, body: body}, 200)
	}
	put("/api/v1/admin/nodes/acme/config", "admin",
		`{"slack_channel":"#incidents","alerts":{"disabled":["a","b"]},"agents":{"k8s_agent":{"timeout":300,"disable_default_tools":["list_nodes"]}}}`)
	put("/api/v1/admin/nodes/platform/config", "admin",
		`{"agents":{"k8s_agent":{"disable_default_tools":["get_events","list_nodes"]}}}`)
	got := put("/api/v1/config/me", "payments-write", `{"slack_channel":"#payments","alerts":{"disabled":["c"]},"agents":{"k8s_agent":{"timeout":60}}}`)
	if got["version"] != 1.0 || compact(t, got["changed_fields"]) != `["agents.k8s_agent.timeout","alerts.disabled","slack_channel"]` {
		t.Fatalf("PUT answer %v", got)
	}
	if !strings.Contains(got["message"].(string), "version 1") {
		t.Errorf("message %q", got["message"])
	}
	wantEff := `{"agents":{"k8s_agent":{"disable_default_tools":["get_events","list_nodes"],"timeout":60}},"alerts":{"disabled":["c"]},"org_id":"acme","slack_channel":"#payments","team_name":"payments","team_node_id":"payments"}`
	if e := compact(t, got["effective_config"]); e != wantEff {
		t.Fatalf("PUT effective_config\n got %s\nwant %s", e, wantEff)
	}
	for _, tok := range []string{"payments-read", "payments-write"} {
		if e := compact(t, h.ok(req{path: "/api/v1/config/me/effective", token: tok}, 200)); e != wantEff {
			t.Fatalf("effective with %s\n got %s\nwant %s", tok, e, wantEff)
		}
	}
	// Admins name the team.
	if e := compact(t, h.ok(req{path: "/api/v1/config/me/effective?team=payments", token: "admin"}, 200)); e != wantEff {
		t.Fatalf("admin effective %s", e)
	}
	raw := h.ok(req{path: "/api/v1/config/me/raw", token: "payments-read"}, 200)
	wantRaw := `{"configs":{"acme":{"agents":{"k8s_agent":{"disable_default_tools":["list_nodes"],"timeout":300}},"alerts":{"disabled":["a","b"]},"slack_channel":"#incidents"},` +
		`"payments":{"agents":{"k8s_agent":{"timeout":60}},"alerts":{"disabled":["c"]},"slack_channel":"#payments"},` +
		`"platform":{"agents":{"k8s_agent":{"disable_default_tools":["get_events","list_nodes"]}}}},"lineage":["acme","platform","payments"]}`
	if g := compact(t, raw); g != wantRaw {
		t.Fatalf("raw\n got %s\nwant %s", g, wantRaw)
	}

	// null removes the team's override: the inherited values show again.
	got = put("/api/v1/config/me", "payments-write", `{"slack_channel":null,"agents":{"k8s_agent":{"timeout":null}}}`)
	if got["version"] != 2.0 {
		t.Fatalf("version %v", got["version"])
	}
	eff := got["effective_config"].(map[string]any)
	if eff["slack_channel"] != "#incidents" || compact(t, eff["agents"]) != `{"k8s_agent":{"disable_default_tools":["get_events","list_nodes"],"timeout":300}}` {
		t.Fatalf("after null: %s", compact(t, eff))
	}
	// A PUT that changes nothing creates no version.
	got = put("/api/v1/config/me", "payments-write", `{"alerts":{"disabled":["c"]}}`)
	if got["version"] != 2.0 || compact(t, got["changed_fields"]) != `[]` {
		t.Fatalf("no-op PUT: %v", got)
	}
	if v := h.teamVersion("payments"); v != 2 {
		t.Fatalf("teams version %v", v)
	}

	// Audit: newest first, diffs, limit, include_full.
	hist := h.ok(req{path: "/api/v1/config/me/audit", token: "payments-read"}, 200)["history"].([]any)
	if len(hist) != 2 {
		t.Fatalf("%d entries: %v", len(hist), hist)
	}
	e0, e1 := hist[0].(map[string]any), hist[1].(map[string]any)
	if e0["version"] != 2.0 || e1["version"] != 1.0 {
		t.Fatalf("order: %v, %v", e0["version"], e1["version"])
	}
	if g := compact(t, e0["diff"]); g != `{"agents.k8s_agent.timeout":{"new":null,"old":60},"slack_channel":{"new":null,"old":"#payments"}}` {
		t.Errorf("v2 diff %s", g)
	}
	if g := compact(t, e1["diff"]); g != `{"agents.k8s_agent.timeout":{"new":60,"old":null},"alerts.disabled":{"new":["c"],"old":null},"slack_channel":{"new":"#payments","old":null}}` {
		t.Errorf("v1 diff %s", g)
	}
	// Removing the last key of an object leaves {} (RFC 7396).
	if g := compact(t, e0["full_config"]); g != `{"agents":{"k8s_agent":{}},"alerts":{"disabled":["c"]}}` {
		t.Errorf("v2 full_config %s", g)
	}
	if e0["changed_by"] != "token:"+h.ids["payments-write"] || e0["changed_at"] == nil {
		t.Errorf("changed_by %v at %v", e0["changed_by"], e0["changed_at"])
	}
	hist = h.ok(req{path: "/api/v1/config/me/audit?limit=1&include_full=false", token: "payments-read"}, 200)["history"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["version"] != 2.0 {
		t.Fatalf("limit=1: %v", hist)
	}
	if _, has := hist[0].(map[string]any)["full_config"]; has {
		t.Errorf("full_config present with include_full=false")
	}
	// The admin audit of the org root.
	org := h.ok(req{path: "/api/v1/admin/nodes/acme/config/audit", token: "admin"}, 200)["history"].([]any)
	if len(org) != 1 || org[0].(map[string]any)["changed_by"] != "token:"+h.ids["admin"]+" (ops)" {
		t.Fatalf("org audit %v", org)
	}
	// The admin node read is the bare own document with its version.
	r := h.do(req{path: "/api/v1/admin/nodes/platform/config", token: "admin"})
	if r.status != 200 || r.header.Get(HeaderConfigVersion) != "1" || compact(t, r.json(t)) != `{"agents":{"k8s_agent":{"disable_default_tools":["get_events","list_nodes"]}}}` {
		t.Fatalf("admin node config: %d %s %s", r.status, r.header.Get(HeaderConfigVersion), r.body)
	}
}

// TestConfigInvalidInputs: every invalid input gets its status and code,
// nothing is saved and the version does not move.
func TestConfigInvalidInputs(t *testing.T) {
	h := configHarness(t)
	h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#p"}`}, 200)
	for _, tc := range []struct {
		name, token, body, ctype string
		status                   int
		code, field              string
	}{
		{name: "ImmutableTeamName", body: `{"team_name":"x"}`, status: 400, code: "invalid_field", field: "team_name"},
		{name: "ImmutableOrgID", body: `{"org_id":"x"}`, status: 400, code: "invalid_field", field: "org_id"},
		{name: "ImmutableTeamNodeID", body: `{"team_node_id":"x","slack_channel":"#q"}`, status: 400, code: "invalid_field", field: "team_node_id"},
		{name: "TimeoutZero", body: `{"agents":{"k8s_agent":{"timeout":0}}}`, status: 400, code: "validation_error", field: "agents.k8s_agent.timeout"},
		{name: "TimeoutNegative", body: `{"agents":{"k8s_agent":{"timeout":-5}}}`, status: 400, code: "validation_error", field: "agents.k8s_agent.timeout"},
		{name: "TimeoutString", body: `{"agents":{"k8s_agent":{"timeout":"60"}}}`, status: 400, code: "validation_error", field: "agents.k8s_agent.timeout"},
		{name: "TimeoutFraction", body: `{"agents":{"k8s_agent":{"timeout":1.5}}}`, status: 400, code: "validation_error", field: "agents.k8s_agent.timeout"},
		{name: "UnknownTopLevelKey", body: `{"colour":"blue"}`, status: 400, code: "validation_error", field: "colour"},
		{name: "UnknownExtraTool", body: `{"agents":{"k8s_agent":{"enable_extra_tools":["no_such_tool"]}}}`, status: 400, code: "validation_error"},
		{name: "UnknownToolServerTool", body: `{"agents":{"k8s_agent":{"enable_extra_tools":["tickets:delete_all"]}}}`, status: 400, code: "validation_error"},
		{name: "UnconfiguredMCPServer", body: `{"mcp_servers":["nowhere"]}`, status: 400, code: "validation_error", field: "mcp_servers"},
		{name: "PlainSecret", body: `{"tokens_vault_path":{"github":"ghp_plainvalue"}}`, status: 400, code: "validation_error", field: "tokens_vault_path.github"},
		{name: "TeamSetsOIDC", body: `{"oidc":{"issuer":"https://id.example.com","client_id":"x"}}`, status: 400, code: "validation_error", field: "oidc.client_id"},
		{name: "TeamSetsEnvRef", body: `{"tokens_vault_path":{"github":"env:GITHUB_TOKEN"}}`, status: 400, code: "validation_error", field: "tokens_vault_path.github"},
		{name: "NotAnObject", body: `["x"]`, status: 400, code: "invalid_request"},
		{name: "MalformedJSON", body: `{"slack_channel":`, status: 400, code: "invalid_request"},
		{name: "TrailingData", body: `{} {}`, status: 400, code: "invalid_request"},
		{name: "WrongContentType", body: `{}`, ctype: "text/plain", status: 415, code: "unsupported_media_type"},
		{name: "ReadOnlyToken", token: "payments-read", body: `{"slack_channel":"#z"}`, status: 403, code: "forbidden"},
		{name: "TooLarge", body: `{"slack_channel":"` + strings.Repeat("x", 2<<20) + `"}`, status: 413, code: "payload_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token
			if tok == "" {
				tok = "payments-write"
			}
			r := req{method: "PUT", path: "/api/v1/config/me", token: tok, body: tc.body}
			if tc.ctype != "" {
				r.header = map[string]string{"Content-Type": tc.ctype}
			}
			e := expectError(t, h.do(r), tc.status, tc.code)
			switch tc.code {
			case "invalid_field":
				if e["field"] != tc.field {
					t.Errorf("error.field = %v, want %s", e["field"], tc.field)
				}
			case "validation_error":
				d, _ := e["details"].(map[string]any)
				if d == nil || d["error"] == "" || (tc.field != "" && d["field"] != tc.field) {
					t.Errorf("error.details = %v, want field %q", d, tc.field)
				}
			}
			if v := h.teamVersion("payments"); v != 1 {
				t.Fatalf("version moved to %v", v)
			}
			raw := h.ok(req{path: "/api/v1/config/me/raw", token: "payments-read"}, 200)
			if g := compact(t, raw["configs"].(map[string]any)["payments"]); g != `{"slack_channel":"#p"}` {
				t.Fatalf("own config changed: %s", g)
			}
		})
	}
	t.Run("BadAuditParams", func(t *testing.T) {
		for q, field := range map[string]string{"limit=0": "limit", "limit=x": "limit", "limit=501": "limit", "limit=": "limit", "include_full=maybe": "include_full"} {
			e := expectError(t, h.do(req{path: "/api/v1/config/me/audit?" + q, token: "payments-read"}), 400, "invalid_request")
			if e["field"] != field {
				t.Errorf("%s: field %v", q, e["field"])
			}
		}
	})
}

// TestConfigToolServers: "server:tool" names are known when the tool
// server is configured in the effective config and reports the tool.
func TestConfigToolServers(t *testing.T) {
	h := configHarness(t)
	h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin",
		body: `{"tool_servers":{"tickets":{"transport":"http","url":"http://127.0.0.1:9000"}}}`}, 200)
	got := h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"mcp_servers":["tickets"],"agents":{"k8s_agent":{"enable_extra_tools":["tickets:get_ticket"]}}}`}, 200)
	if got["version"] != 1.0 {
		t.Fatalf("answer %v", got)
	}
	expectError(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"agents":{"k8s_agent":{"enable_extra_tools":["tickets:nope"]}}}`}), 400, "validation_error")
}

// TestConfigTenantIsolation: a team token never reads or writes another
// team's config, org settings, or change requests.
func TestConfigTenantIsolation(t *testing.T) {
	h := configHarness(t)
	h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#secret-payments"}`}, 200)
	for _, r := range []req{
		{path: "/api/v1/config/me/effective?team=payments"},
		{path: "/api/v1/config/me/raw?team=payments"},
		{path: "/api/v1/config/me/audit?team=payments"},
		{path: "/api/v1/config/me/pending?team=payments"},
		{method: "PUT", path: "/api/v1/config/me?team=payments", body: `{"slack_channel":"#x"}`},
		{path: "/api/v1/admin/nodes/payments/config"},
		{path: "/api/v1/admin/nodes/acme/config"},
		{method: "PUT", path: "/api/v1/admin/nodes/acme/config", body: `{"slack_channel":"#x"}`},
		{method: "PUT", path: "/api/v1/admin/nodes/payments/config", body: `{"slack_channel":"#x"}`},
		{path: "/api/v1/admin/nodes/payments/config/audit"},
		{path: "/api/v1/admin/change-requests"},
		{method: "POST", path: "/api/v1/admin/change-requests/cr_x/approve", body: `{}`},
		{method: "POST", path: "/api/v1/admin/change-requests/cr_x/reject", body: `{"reason":"x"}`},
	} {
		r.token = "search-write"
		resp := h.do(r)
		if resp.status != 403 {
			t.Errorf("%s %s with another team's token: %d %s", r.method, r.path, resp.status, resp.body)
		}
		if strings.Contains(string(resp.body), "secret-payments") {
			t.Errorf("%s %s leaked payments' config", r.method, r.path)
		}
	}
	// Its own view never contains payments' values.
	eff := h.ok(req{path: "/api/v1/config/me/effective", token: "search-write"}, 200)
	if eff["team_node_id"] != "search" || eff["slack_channel"] != nil {
		t.Fatalf("search effective %v", eff)
	}
	raw := h.ok(req{path: "/api/v1/config/me/raw", token: "search-write"}, 200)
	if compact(t, raw["lineage"]) != `["acme","search"]` {
		t.Fatalf("search lineage %v", raw["lineage"])
	}
	if v := h.teamVersion("payments"); v != 1 {
		t.Fatalf("payments version %v", v)
	}
	// Admins must name a team, and only a team.
	expectError(t, h.do(req{path: "/api/v1/config/me/effective", token: "admin"}), 400, "invalid_request")
	expectError(t, h.do(req{path: "/api/v1/config/me/effective?team=platform", token: "admin"}), 400, "invalid_request")
	expectError(t, h.do(req{path: "/api/v1/config/me/effective?team=nope", token: "admin"}), 404, "not_found")
	expectError(t, h.do(req{path: "/api/v1/admin/nodes/nope/config", token: "admin"}), 404, "not_found")
}

// enableApprovals sets the org's approvers and turns approvals on for
// every team.
func enableApprovals(h *harness) {
	h.t.Helper()
	h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin",
		body: `{"approvers":["lead@example.com"],"feature_flags":{"require_approval":true}}`}, 200)
}

func (h *harness) submitChange(token, body string) map[string]any {
	h.t.Helper()
	m := h.ok(req{method: "PUT", path: "/api/v1/config/me", token: token, body: body}, 202)
	return m
}

func TestConfigApprovals(t *testing.T) {
	t.Run("SubmitThenApprove", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		cr := h.submitChange("payments-write", `{"slack_channel":"#new"}`)
		id, _ := cr["change_request_id"].(string)
		if !strings.HasPrefix(id, "cr_") || cr["status"] != "pending_approval" || compact(t, cr["approvers"]) != `["lead@example.com"]` ||
			compact(t, cr["changes"]) != `{"slack_channel":{"new":"#new","old":null}}` || !strings.Contains(cr["message"].(string), "approval") ||
			cr["requested_by"] != "token:"+h.ids["payments-write"] || cr["created_at"] == nil || cr["expires_at"] == nil {
			t.Fatalf("202 body %v", cr)
		}
		if v := h.teamVersion("payments"); v != 0 {
			t.Fatalf("version moved to %v before approval", v)
		}
		if eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200); eff["slack_channel"] != nil {
			t.Fatalf("change applied before approval: %v", eff)
		}
		pending := h.ok(req{path: "/api/v1/config/me/pending", token: "payments-read"}, 200)["change_requests"].([]any)
		if len(pending) != 1 || pending[0].(map[string]any)["change_request_id"] != id {
			t.Fatalf("pending %v", pending)
		}
		if p := h.ok(req{path: "/api/v1/config/me/pending", token: "search-write"}, 200)["change_requests"].([]any); len(p) != 0 {
			t.Fatalf("another team sees payments' requests: %v", p)
		}
		all := h.ok(req{path: "/api/v1/admin/change-requests?status=pending", token: "admin"}, 200)["change_requests"].([]any)
		if len(all) != 1 {
			t.Fatalf("admin pending %v", all)
		}
		// A team token cannot approve, even its own.
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "payments-write"}), 403, "forbidden")
		// An OIDC admin outside the approvers cannot either.
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "raw:Bearer " + jwtStranger}), 403, "forbidden")
		got := h.ok(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "raw:Bearer " + jwtLead}, 200)
		if got["status"] != "applied" || got["version"] != 1.0 || got["change_request_id"] != id {
			t.Fatalf("approve answer %v", got)
		}
		if v := h.teamVersion("payments"); v != 1 {
			t.Fatalf("version %v after approval", v)
		}
		if eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200); eff["slack_channel"] != "#new" {
			t.Fatalf("not applied: %v", eff)
		}
		hist := h.ok(req{path: "/api/v1/config/me/audit", token: "payments-read"}, 200)["history"].([]any)
		if len(hist) != 2 || hist[0].(map[string]any)["event"] != "applied" || hist[0].(map[string]any)["changed_by"] != "lead@example.com" ||
			hist[1].(map[string]any)["event"] != "submitted" {
			t.Fatalf("history %s", compact(t, hist))
		}
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "admin"}), 409, "invalid_state")
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/cr_nope/approve", token: "admin"}), 404, "not_found")
	})
	t.Run("TurningApprovalOffNeedsApproval", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		h.submitChange("payments-write", `{"feature_flags":{"require_approval":false}}`)
		if v := h.teamVersion("payments"); v != 0 {
			t.Fatalf("version %v", v)
		}
		// Invalid input is still 400 under approvals, and a no-op is 200.
		expectError(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"team_name":"x"}`}), 400, "invalid_field")
		h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"tools":null}`}, 200)
		// Admin writes apply directly.
		h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"slack_channel":"#a"}`}, 200)
	})
	t.Run("RejectLeavesConfig", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		id := h.submitChange("payments-write", `{"slack_channel":"#new"}`)["change_request_id"].(string)
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/reject", token: "admin", body: `{}`}), 400, "invalid_request")
		got := h.ok(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/reject", token: "admin", body: `{"reason":"use #incidents"}`}, 200)
		if got["status"] != "rejected" || got["reason"] != "use #incidents" {
			t.Fatalf("reject answer %v", got)
		}
		if v := h.teamVersion("payments"); v != 0 {
			t.Fatalf("version %v", v)
		}
		if p := h.ok(req{path: "/api/v1/config/me/pending", token: "payments-read"}, 200)["change_requests"].([]any); len(p) != 0 {
			t.Fatalf("still pending: %v", p)
		}
		hist := h.ok(req{path: "/api/v1/config/me/audit", token: "payments-read"}, 200)["history"].([]any)
		if hist[0].(map[string]any)["event"] != "rejected" || hist[0].(map[string]any)["reason"] != "use #incidents" {
			t.Fatalf("history %s", compact(t, hist))
		}
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "admin"}), 409, "invalid_state")
	})
	t.Run("ExpiryLeavesConfig", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		id := h.submitChange("payments-write", `{"slack_channel":"#new"}`)["change_request_id"].(string)
		h.clock.Advance(7*24*time.Hour + time.Second)
		if p := h.ok(req{path: "/api/v1/config/me/pending", token: "payments-read"}, 200)["change_requests"].([]any); len(p) != 0 {
			t.Fatalf("expired request still pending: %v", p)
		}
		exp := h.ok(req{path: "/api/v1/admin/change-requests?status=expired", token: "admin"}, 200)["change_requests"].([]any)
		if len(exp) != 1 {
			t.Fatalf("expired list %v", exp)
		}
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "admin"}), 409, "invalid_state")
		if v := h.teamVersion("payments"); v != 0 {
			t.Fatalf("version %v", v)
		}
	})
	t.Run("SelfApprovalRefused", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		id := h.submitChange("raw:Bearer "+jwtLeadAsDev, `{"slack_channel":"#mine"}`)["change_request_id"].(string)
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "raw:Bearer " + jwtLead}), 403, "forbidden")
		if v := h.teamVersion("payments"); v != 0 {
			t.Fatalf("version %v", v)
		}
	})
	t.Run("ConflictOnStaleBase", func(t *testing.T) {
		h := configHarness(t)
		enableApprovals(h)
		id := h.submitChange("payments-write", `{"slack_channel":"#new"}`)["change_request_id"].(string)
		h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"slack_group_to_ping":"@oncall"}`}, 200)
		expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "admin"}), 409, "conflict")
		if v := h.teamVersion("payments"); v != 1 {
			t.Fatalf("version %v", v)
		}
		if eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200); eff["slack_channel"] != nil {
			t.Fatalf("conflicting change applied: %v", eff)
		}
		cr := h.ok(req{path: "/api/v1/admin/change-requests/" + id, token: "admin"}, 200)
		if cr["status"] != "conflict" {
			t.Fatalf("status %v", cr["status"])
		}
	})
	t.Run("BadStatusFilter", func(t *testing.T) {
		h := configHarness(t)
		expectError(t, h.do(req{path: "/api/v1/admin/change-requests?status=maybe", token: "admin"}), 400, "invalid_request")
	})
}

// TestEffectiveCacheNeverStale: an ancestor's change shows at once.
func TestEffectiveCacheNeverStale(t *testing.T) {
	h := configHarness(t)
	for i := range 3 {
		ch := fmt.Sprintf("#org-%d", i)
		h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin", body: `{"slack_channel":"` + ch + `"}`}, 200)
		for range 2 { // the second read is served from the cache
			if eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200); eff["slack_channel"] != ch {
				t.Fatalf("effective slack_channel %v, want %s", eff["slack_channel"], ch)
			}
		}
		h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/platform/config", token: "admin", body: `{"slack_group_to_ping":"@g` + ch + `"}`}, 200)
		if eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200); eff["slack_group_to_ping"] != "@g"+ch {
			t.Fatalf("group change not visible: %v", eff)
		}
	}
}

func TestEffectiveCacheBounded(t *testing.T) {
	c := newEffectiveCache(3)
	for i := range 10 {
		c.put(fmt.Sprint("n", i), effectiveEntry{key: "k", body: json.RawMessage(`{}`)})
	}
	if c.len() != 3 {
		t.Fatalf("cache holds %d entries, want 3", c.len())
	}
	c.put("n9", effectiveEntry{key: "k2", body: json.RawMessage(`{"a":1}`)})
	if e, ok := c.get("n9"); !ok || e.key != "k2" || string(e.body) != `{"a":1}` {
		t.Fatalf("entry %+v", e)
	}
	if c.len() != 3 {
		t.Fatalf("replacing grew the cache to %d", c.len())
	}
}

func TestConfigSchema(t *testing.T) {
	h := configHarness(t)
	m := h.ok(req{path: "/api/v1/config/schema", token: "payments-read"}, 200)
	if _, ok := m["properties"].(map[string]any)["agents"]; !ok {
		t.Fatalf("schema lacks agents: %v", m)
	}
}

// benchConfigServer builds org → group → subgroup → team with about 50 KB
// of config at each level and returns the handler and an admin and a team
// token.
func benchConfigServer(b *testing.B) (http.Handler, string, string) {
	return benchConfigServerLog(b, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// benchConfigServerLog is benchConfigServer logging to logger, its Config
// changed by each of with.
func benchConfigServerLog(b *testing.B, logger *slog.Logger, with ...func(*Config)) (http.Handler, string, string) {
	b.Helper()
	store, err := db.Open(filepath.Join(b.TempDir(), db.FileName), db.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	ctx := context.Background()
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		b.Fatal(err)
	}
	for _, n := range []db.Node{{Name: "platform", Parent: "acme", Kind: db.KindGroup}, {Name: "core", Parent: "platform", Kind: db.KindGroup}, {Name: "payments", Parent: "core", Kind: db.KindTeam}} {
		if _, err := store.CreateNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	admin, _, err := store.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenAdmin})
	if err != nil {
		b.Fatal(err)
	}
	team, _, err := store.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, node := range []string{"acme", "platform", "core", "payments"} {
		agents := map[string]any{}
		for i := 0; i < 100; i++ {
			agents[fmt.Sprintf("custom_%s_%03d", node, i)] = map[string]any{"prompt": strings.Repeat("investigate carefully ", 22), "timeout": 60 + i}
		}
		patch := map[string]any{"agents": agents, "slack_channel": "#" + node}
		if _, err := store.PatchNodeConfig(ctx, node, patch, db.Actor{ID: "bench"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Nodes: store, Tokens: store, Logger: logger,
		RateLimits: RateLimits{Read: -1, Write: -1, Run: -1}}
	for _, f := range with {
		f(&cfg)
	}
	return New(cfg).Handler(), admin, team
}

// discardWriter is a ResponseWriter that keeps only the status and size,
// as a network connection's buffered writer costs no allocation per
// response; httptest.ResponseRecorder would copy each 200 KB body.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}
func (d *discardWriter) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = 200
	}
	d.n += len(p)
	return len(p), nil
}

// benchGet serves GET path in parallel through h with a discarding writer.
func benchGet(b *testing.B, h http.Handler, path, token string) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = "192.0.2.1:1234"
			r.Header.Set("Authorization", "Bearer "+token)
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Errorf("%s: status %d", path, w.status)
				return
			}
		}
	})
}

// BenchmarkConfigEffective compares GET /config/me/effective on a 4-level
// tree (~50 KB of config per level) with GET /auth/me in the same run.
func BenchmarkConfigEffective(b *testing.B) {
	h, _, team := benchConfigServer(b)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/config/me/effective", nil)
	r.Header.Set("Authorization", "Bearer "+team)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Body.Len() < 150_000 {
		b.Fatalf("effective: %d, %d bytes", w.Code, w.Body.Len())
	}
	b.Run("auth_me", func(b *testing.B) { benchGet(b, h, "/api/v1/auth/me", team) })
	b.Run("effective", func(b *testing.B) { benchGet(b, h, "/api/v1/config/me/effective", team) })
}

// BenchmarkConfigPut is sequential PUT /config/me with bbolt's fsync on:
// one write transaction (and fsync) per change.
func BenchmarkConfigPut(b *testing.B) {
	h, _, team := benchConfigServer(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest(http.MethodPut, "/api/v1/config/me", strings.NewReader(fmt.Sprintf(`{"slack_group_to_ping":"@g%d"}`, i)))
		r.Header.Set("Authorization", "Bearer "+team)
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("PUT: %d %s", w.Code, w.Body)
		}
	}
}
