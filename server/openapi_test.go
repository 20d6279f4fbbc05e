package server

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/server/openapitest"
)

// stubLogin makes registerOIDCRoutes register the sign-in routes.
type stubLogin struct{}

func (stubLogin) AuthCodeURL(context.Context, string, string, string, string) (string, error) {
	return "https://idp.example/authorize", nil
}

func (stubLogin) Exchange(context.Context, string, string, string, string) (*LoginResult, error) {
	return nil, db.Errorf(db.EUNAUTHORIZED, "stub")
}

type stubVerifier struct{}

func (stubVerifier) Verify(context.Context, string) (*Principal, error) {
	return nil, db.Errorf(db.EUNAUTHORIZED, "stub")
}

var routeParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// openAPIPath turns an httprouter pattern into an OpenAPI path.
func openAPIPath(p string) string { return routeParam.ReplaceAllString(p, "{$1}") }

// TestOpenAPICoversRoutes is the "no undocumented route" rule: every route
// of a fully configured server has an operation in openapi.json with the
// same permission, rate class and authentication, and every operation is
// a registered route.
func TestOpenAPICoversRoutes(t *testing.T) {
	doc, _, err := openapitest.Load(OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	h := newHarness(t, func(c *Config) { c.OIDCLogin, c.JWTVerifier = stubLogin{}, stubVerifier{} })
	registered := map[string]bool{}
	for _, r := range h.srv.Routes() {
		key := r.Method + " " + openAPIPath(r.Path)
		registered[key] = true
		item := doc.Paths.Value(openAPIPath(r.Path))
		if item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("route %s %s has no operation in server/openapi.json", r.Method, r.Path)
			continue
		}
		op := item.GetOperation(r.Method)
		perm, _ := op.Extensions["x-rootcause-permission"].(string)
		class, _ := op.Extensions["x-rootcause-rate-class"].(string)
		wantPerm := r.Permission
		if r.Public {
			wantPerm = "public"
		}
		if perm != wantPerm {
			t.Errorf("%s: x-rootcause-permission = %q, route needs %q", key, perm, wantPerm)
		}
		if class != r.Class {
			t.Errorf("%s: x-rootcause-rate-class = %q, route is %q", key, class, r.Class)
		}
		public := op.Security != nil && len(*op.Security) == 0
		if public != r.Public {
			t.Errorf("%s: documented public = %v, route public = %v", key, public, r.Public)
		}
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", key)
		}
		codes := op.Responses.Map()
		if !r.Public {
			for _, c := range []string{"401", "403", "429", "500"} {
				if codes[c] == nil {
					t.Errorf("%s: no %s response documented", key, c)
				}
			}
		}
		if op.RequestBody != nil && op.RequestBody.Value.Required && codes["413"] == nil {
			t.Errorf("%s: takes a body but documents no 413", key)
		}
	}
	var extra []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !registered[method+" "+path] {
				extra = append(extra, method+" "+path)
			}
		}
	}
	sort.Strings(extra)
	for _, e := range extra {
		t.Errorf("operation %s is documented but no route serves it", e)
	}
}

// TestOpenAPICheckerCatchesDrift proves the checker fails on answers that
// break the document, so a passing suite means something.
func TestOpenAPICheckerCatchesDrift(t *testing.T) {
	c := openapitest.New(t, OpenAPIDocument())
	req, _ := http.NewRequest(http.MethodGet, "http://x/api/v1/auth/me", nil)
	hdr := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {strings.Repeat("a", 32)}, "X-Rootcause-Version": {"1"}}
	good := `{"role":"team","auth_kind":"team_token","org_id":"acme","team_node_id":"payments","subject":null,"email":null,"can_write":false,"permissions":["team:read"]}`
	if err := c.Check(req, nil, 200, hdr, []byte(good)); err != nil {
		t.Fatalf("a valid answer was refused: %v", err)
	}
	for name, tc := range map[string]struct {
		status int
		body   string
		hdr    http.Header
	}{
		"missing field":           {200, `{"role":"team"}`, hdr},
		"unknown field":           {200, strings.Replace(good, `"role"`, `"secret":"x","role"`, 1), hdr},
		"wrong type":              {200, strings.Replace(good, `"can_write":false`, `"can_write":"no"`, 1), hdr},
		"undocumented status":     {418, `{"error":{"code":"x","message":"y","request_id":"z"}}`, hdr},
		"bad error body":          {404, `{"message":"not found"}`, hdr},
		"no request id":           {200, good, http.Header{"Content-Type": {"application/json"}, "X-Rootcause-Version": {"1"}}},
		"429 without Retry-After": {429, `{"error":{"code":"rate_limited","message":"m","request_id":"r","retry_after":3}}`, hdr},
		"wrong content type":      {200, good, http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {strings.Repeat("a", 32)}, "X-Rootcause-Version": {"1"}}},
	} {
		if err := c.Check(req, nil, tc.status, tc.hdr, []byte(tc.body)); err == nil {
			t.Errorf("%s: the checker accepted %d %s", name, tc.status, tc.body)
		}
	}
	// An undocumented route that answers is caught too.
	req2, _ := http.NewRequest(http.MethodGet, "http://x/api/v1/secret-admin", nil)
	if err := c.Check(req2, nil, 200, hdr, []byte(`{}`)); err == nil {
		t.Error("an answer from an undocumented route was accepted")
	}
	if err := c.Check(req2, nil, 404, hdr, []byte(`{"error":{"code":"not_found","message":"m","request_id":"r"}}`)); err != nil {
		t.Errorf("the 404 of an unknown route was refused: %v", err)
	}
	// A 2xx answer to a request the document forbids: the document and the
	// handler disagree about the request.
	req3, _ := http.NewRequest(http.MethodPost, "http://x/api/v1/admin/tokens/revoke", nil)
	req3.Header.Set("Content-Type", "application/json")
	if err := c.Check(req3, []byte(`{"token_id": 7}`), 200, hdr, []byte(`{"token_id":"a","revoked_at":"2026-03-14T10:00:00Z"}`)); err == nil {
		t.Error("a 2xx answer to an undocumented request body was accepted")
	}
}

// TestOpenAPIServed: the document is served to any authenticated caller,
// byte for byte the embedded one, and refused anonymously.
func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t)
	r := h.do(req{path: "/api/v1/openapi.json", token: "payments-read"})
	if r.status != 200 || !bytes.Equal(r.body, OpenAPIDocument()) {
		t.Fatalf("GET /api/v1/openapi.json: %d, %d bytes", r.status, len(r.body))
	}
	expectError(t, h.do(req{path: "/api/v1/openapi.json"}), 401, db.EUNAUTHORIZED)
}

// TestOpenAPIContractFlow drives one answer of most operations and status
// classes through the harness, whose checker validates each against the
// document.
func TestOpenAPIContractFlow(t *testing.T) {
	h := newHarness(t)
	steps := []struct {
		r      req
		status int
	}{
		{req{path: "/healthz"}, 200},
		{req{path: "/readyz"}, 200},
		{req{path: "/api/v1/auth/me", token: "payments-read"}, 200},
		{req{path: "/api/v1/auth/me", token: "admin"}, 200},
		{req{path: "/api/v1/auth/me"}, 401},
		{req{path: "/api/v1/auth/me", token: "raw:Bearer nope.nope"}, 401},
		{req{path: "/api/v1/admin/nodes", token: "admin"}, 200},
		{req{path: "/api/v1/admin/nodes", token: "payments-read"}, 403},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{"name":"checkout","parent":"platform","kind":"team"}`}, 201},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{"name":"checkout","parent":"platform","kind":"team"}`}, 409},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{"name":"x","parent":"nowhere","kind":"team"}`}, 404},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{"kind":"team"}`}, 400},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{"name":"` + strings.Repeat("x", 70<<10) + `"}`}, 413},
		{req{method: "POST", path: "/api/v1/admin/nodes", token: "admin", body: `{}`, header: map[string]string{"Content-Type": "text/plain"}}, 415},
		{req{path: "/api/v1/admin/teams", token: "admin"}, 200},
		{req{method: "POST", path: "/api/v1/admin/tokens", token: "admin", body: `{"kind":"team","team":"search","name":"bot","ttl":"30d"}`}, 201},
		{req{path: "/api/v1/admin/tokens", token: "admin"}, 200},
		{req{method: "POST", path: "/api/v1/admin/tokens/revoke", token: "admin", body: `{"token_id":"nope"}`}, 404},
		{req{path: "/api/v1/admin/backup", token: "admin"}, 200},
		{req{path: "/api/v1/config/me/effective", token: "payments-read"}, 200},
		{req{path: "/api/v1/config/me/raw", token: "payments-read"}, 200},
		{req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#payments"}`}, 200},
		{req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"team_name":"x"}`}, 400},
		{req{method: "PUT", path: "/api/v1/config/me", token: "payments-read", body: `{"slack_channel":"#x"}`}, 403},
		{req{path: "/api/v1/config/me/audit?limit=5", token: "payments-read"}, 200},
		{req{path: "/api/v1/config/me/pending", token: "payments-read"}, 200},
		{req{path: "/api/v1/config/schema", token: "payments-read"}, 200},
		{req{path: "/api/v1/admin/nodes/platform/config", token: "admin"}, 200},
		{req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin", body: `{"approvers":["lead@example.com"]}`}, 200},
		{req{path: "/api/v1/admin/nodes/acme/config/audit", token: "admin"}, 200},
		{req{path: "/api/v1/admin/nodes/nowhere/config", token: "admin"}, 404},
		{req{path: "/api/v1/admin/change-requests", token: "admin"}, 200},
		{req{path: "/api/v1/admin/change-requests/nope", token: "admin"}, 404},
		{req{path: "/api/v1/agents/status/nope", token: "payments-read"}, 503},
		{req{path: "/api/v1/metrics", token: "admin"}, 404},
		{req{method: "DELETE", path: "/api/v1/admin/nodes", token: "admin"}, 405},
	}
	for _, s := range steps {
		r := h.do(s.r)
		if r.status != s.status {
			t.Errorf("%s %s: %d, want %d: %s", s.r.method, s.r.path, r.status, s.status, r.body)
		}
	}
	if n := h.contract.Count(); n < len(steps) {
		t.Errorf("the checker saw %d answers, want %d", n, len(steps))
	}
	t.Logf("validated:\n%s", h.contract.Summary())
}
