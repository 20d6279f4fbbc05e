package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/notify"
)

// TestConfigWebhookURLValidated: webhooks.investigation_complete is held to
// the delivery rules (notify.ValidateURL with webhook.allow) when a team or
// an admin saves it; a refused URL is 400 validation_error naming the
// field, and nothing is saved.
func TestConfigWebhookURLValidated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow []string
		token string // "admin" writes through the admin node route
		url   string
		ok    bool
		msg   string // a substring of details.error on refusal
	}{
		{name: "PublicHTTPS", url: "https://hooks.example.com/rootcause", ok: true},
		{name: "PublicHTTPSAdmin", token: "admin", url: "https://hooks.example.com/rootcause", ok: true},
		{name: "PlainHTTP", url: "http://hooks.example.com/rootcause", msg: "https"},
		{name: "UserInfo", url: "https://user:pw@hooks.example.com/x", msg: "user info"},
		{name: "Loopback", url: "https://127.0.0.1:8443/hook", msg: "refused"},
		{name: "LoopbackV6", url: "https://[::1]:8443/hook", msg: "refused"},
		{name: "Localhost", url: "https://localhost/hook", msg: "refused by the outbound guard"},
		{name: "EncodedLoopback", url: "https://2130706433/hook", msg: "refused by the outbound guard"},
		{name: "Private", url: "https://10.0.0.1/hook", msg: "refused"},
		{name: "PrivateAdmin", token: "admin", url: "https://10.0.0.1/hook", msg: "refused"},
		{name: "Metadata", url: "https://169.254.169.254/latest", msg: "refused"},
		{name: "NotAllowlisted", allow: []string{"10.20.0.0/16"}, url: "http://127.0.0.1:9000/hook", msg: "refused by the outbound guard"},
		{name: "AllowlistedPlainHTTPElsewhere", allow: []string{"10.20.0.0/16"}, url: "http://hooks.example.com/hook", msg: "https"},
		{name: "AllowlistedLoopbackHTTP", allow: []string{"127.0.0.1"}, url: "http://127.0.0.1:9000/hook", ok: true},
		{name: "AllowlistedLoopbackAdmin", allow: []string{"127.0.0.1"}, token: "admin", url: "http://127.0.0.1:9000/hook", ok: true},
		{name: "AllowlistedCIDR", allow: []string{"10.20.0.0/16"}, url: "https://10.20.3.4/hook", ok: true},
		{name: "AllowlistedHost", allow: []string{"hooks.internal"}, url: "http://hooks.internal/hook", ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allow := notify.MustAllowlist(tc.allow...)
			h := newHarness(t, func(c *Config) {
				c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1}
				c.WebhookAllow = allow
			})
			body := `{"webhooks":{"investigation_complete":` + jsonString(t, tc.url) + `}}`
			r := req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: body}
			if tc.token == "admin" {
				r = req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: body}
			}
			resp := h.do(r)
			if tc.ok {
				if resp.status != 200 {
					t.Fatalf("status %d, want 200: %s", resp.status, resp.body)
				}
				eff := h.ok(req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200)
				if got := eff["webhooks"].(map[string]any)["investigation_complete"]; got != tc.url {
					t.Fatalf("effective webhook %v, want %s", got, tc.url)
				}
				return
			}
			e := expectError(t, resp, 400, "validation_error")
			d, _ := e["details"].(map[string]any)
			if d["field"] != "webhooks.investigation_complete" {
				t.Errorf("details.field = %v, want webhooks.investigation_complete", d["field"])
			}
			if msg, _ := d["error"].(string); !strings.Contains(msg, tc.msg) {
				t.Errorf("details.error = %q, want it to mention %q", msg, tc.msg)
			}
			if v := h.teamVersion("payments"); v != 0 {
				t.Errorf("version moved to %v", v)
			}
		})
	}
}

// TestConfigWebhookURLUnchangedNotRechecked: a URL saved under an earlier
// allowlist does not block unrelated writes, but setting it again to a
// refused URL does.
func TestConfigWebhookURLUnchangedNotRechecked(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1} })
	// Saved directly in the store, as with a wider allowlist before.
	h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"slack_channel":"#p"}`}, 200)
	own := map[string]any{"webhooks": map[string]any{"investigation_complete": "http://127.0.0.1:9/hook"}}
	if _, err := h.db.PatchNodeConfig(t.Context(), "payments", own, actorOf(&Principal{ID: "test"}), nil); err != nil {
		t.Fatal(err)
	}
	h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#q"}`}, 200)
	expectError(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"webhooks":{"investigation_complete":"http://127.0.0.2:9/hook"}}`}), 400, "validation_error")
}

// TestEmptyListsAreArrays: list fields of API answers are [] when empty,
// never null (and openapi.json declares them non-nullable, which the
// harness checks on every answer).
func TestEmptyListsAreArrays(t *testing.T) {
	h := configHarness(t)
	// A change request submitted with no approvers configured at the org.
	h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"feature_flags":{"require_approval":true}}`}, 200)
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		field                           string // dotted path of the list
	}{
		{"PendingNone", "GET", "/api/v1/config/me/pending", "payments-read", "", 200, "change_requests"},
		{"AdminPendingNone", "GET", "/api/v1/admin/change-requests", "admin", "", 200, "change_requests"},
		{"AdminAllOtherNode", "GET", "/api/v1/admin/change-requests?status=all&node=search", "admin", "", 200, "change_requests"},
		{"NoChangePut", "PUT", "/api/v1/config/me", "search-write", `{}`, 200, "changed_fields"},
		{"SubmittedWithoutApprovers", "PUT", "/api/v1/config/me", "payments-write", `{"slack_channel":"#x"}`, 202, "approvers"},
		{"PendingWithoutApprovers", "GET", "/api/v1/config/me/pending", "payments-read", "", 200, "change_requests.0.approvers"},
		{"AuditNone", "GET", "/api/v1/config/me/audit", "search-write", "", 200, "history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := h.ok(req{method: tc.method, path: tc.path, token: tc.token, body: tc.body}, tc.status)
			var v any = m
			for _, k := range strings.Split(tc.field, ".") {
				switch x := v.(type) {
				case map[string]any:
					v = x[k]
				case []any:
					if len(x) == 0 {
						t.Fatalf("%s: empty list before %s", tc.field, k)
					}
					v = x[0]
				}
			}
			if _, ok := v.([]any); !ok {
				t.Fatalf("%s = %#v, want an array: %v", tc.field, v, m)
			}
		})
	}
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
