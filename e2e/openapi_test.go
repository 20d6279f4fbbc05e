package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	rcserver "github.com/rootcause/rootcause/server"
	"github.com/rootcause/rootcause/server/openapitest"
)

// contractClient sends requests whose answers are validated against the
// OpenAPI document by the checker.
type contractClient struct {
	t      *testing.T
	c      *http.Client
	chk    *openapitest.Checker
	server *server
}

func (cc *contractClient) do(method, path, auth string, body any, hdr ...string) *response {
	cc.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			buf, _ := json.Marshal(b)
			rd = bytes.NewReader(buf)
		}
	}
	req, err := http.NewRequest(method, cc.server.url+path, rd)
	if err != nil {
		cc.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cc.c.Do(req)
	if err != nil {
		cc.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := &response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func (cc *contractClient) expect(r *response, status int, what string) *response {
	cc.t.Helper()
	if r.status != status {
		cc.t.Fatalf("%s: %d, want %d: %s", what, r.status, status, r.raw)
	}
	return r
}

// TestOpenAPIContractEndToEnd runs a representative black-box flow through
// the real binary and validates every answer against server/openapi.json:
// identity, admin nodes and tokens, config, investigations (async run,
// status, list, cancel, events), metrics, and the error answers 400, 401,
// 403, 404, 405, 413, 415 and 429. It also checks the JSON request log
// never carries a secret.
func TestOpenAPIContractEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir, "ROOTCAUSE_RATE_LIMIT_RUN=3", "ROOTCAUSE_LOG_FORMAT=json", "ROOTCAUSE_LOG_LEVEL=debug")
	chk := openapitest.New(t, rcserver.OpenAPIDocument())
	cc := &contractClient{t: t, c: &http.Client{Timeout: 60 * time.Second, Transport: chk.Transport(nil)}, chk: chk, server: srv}

	adminTok := issue(t, dir, "--admin", "--name", "ops")
	admin := "Bearer " + adminTok
	payments := addTeam(t, srv, adminTok, "payments", map[string]any{"evidence_bundle": bundlePath(t, "oom-after-deploy")}, true)
	readOnly := "Bearer " + issue(t, dir, "--team", "payments")

	cc.expect(cc.do("GET", "/healthz", "", nil), 200, "healthz")
	cc.expect(cc.do("GET", "/readyz", "", nil), 200, "readyz")
	cc.expect(cc.do("GET", "/api/v1/auth/me", payments, nil), 200, "auth/me")
	cc.expect(cc.do("GET", "/api/v1/auth/me", admin, nil), 200, "auth/me admin")
	cc.expect(cc.do("GET", "/api/v1/auth/me", "", nil), 401, "auth/me anonymous")
	cc.expect(cc.do("GET", "/api/v1/auth/me", "Bearer rct_nope.nope", nil), 401, "auth/me bad token")
	doc := cc.expect(cc.do("GET", "/api/v1/openapi.json", payments, nil), 200, "openapi.json")
	if !bytes.Equal(doc.raw, rcserver.OpenAPIDocument()) {
		t.Error("served OpenAPI document differs from the embedded one")
	}

	// Admin.
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", admin, map[string]string{"name": "platform", "kind": "group"}), 201, "create group")
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", admin, map[string]string{"name": "platform", "kind": "group"}), 409, "duplicate node")
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", admin, map[string]string{"kind": "group"}), 400, "node without name")
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", payments, map[string]string{"name": "x", "kind": "team"}), 403, "team creating a node")
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", admin, `{"name":"`+strings.Repeat("x", 70<<10)+`","kind":"team"}`), 413, "oversized body")
	cc.expect(cc.do("POST", "/api/v1/admin/nodes", admin, `{}`, "Content-Type", "text/plain"), 415, "wrong content type")
	cc.expect(cc.do("GET", "/api/v1/admin/nodes", admin, nil), 200, "list nodes")
	cc.expect(cc.do("GET", "/api/v1/admin/teams", admin, nil), 200, "list teams")
	tok := cc.expect(cc.do("POST", "/api/v1/admin/tokens", admin, map[string]any{"kind": "team", "team": "payments", "name": "bot", "ttl": "30d"}), 201, "issue token")
	cc.expect(cc.do("GET", "/api/v1/admin/tokens", admin, nil), 200, "list tokens")
	cc.expect(cc.do("POST", "/api/v1/admin/tokens/revoke", admin, map[string]any{"token_id": tok.body["token_id"]}), 200, "revoke")
	cc.expect(cc.do("POST", "/api/v1/admin/tokens/revoke", admin, map[string]any{"token_id": "rct_missing"}), 404, "revoke unknown")
	cc.expect(cc.do("DELETE", "/api/v1/admin/nodes", admin, nil), 405, "wrong method")
	cc.expect(cc.do("GET", "/api/v1/nowhere", admin, nil), 404, "unknown route")

	// Config.
	cc.expect(cc.do("GET", "/api/v1/config/me/effective", payments, nil), 200, "effective")
	cc.expect(cc.do("PUT", "/api/v1/config/me", payments, map[string]any{"slack_channel": "#payments"}), 200, "put config")
	cc.expect(cc.do("PUT", "/api/v1/config/me", payments, map[string]any{"team_name": "x"}), 400, "immutable field")
	cc.expect(cc.do("PUT", "/api/v1/config/me", payments, map[string]any{"agents": map[string]any{"k8s_agent": map[string]any{"timeout": -1}}}), 400, "validation error")
	cc.expect(cc.do("PUT", "/api/v1/config/me", readOnly, map[string]any{"slack_channel": "#x"}), 403, "read-only put")
	cc.expect(cc.do("GET", "/api/v1/config/me/raw", payments, nil), 200, "raw")
	cc.expect(cc.do("GET", "/api/v1/config/me/audit?limit=2&include_full=false", payments, nil), 200, "audit")
	cc.expect(cc.do("GET", "/api/v1/config/me/pending", payments, nil), 200, "pending")
	cc.expect(cc.do("GET", "/api/v1/config/schema", payments, nil), 200, "schema")
	cc.expect(cc.do("GET", "/api/v1/admin/nodes/payments/config", admin, nil), 200, "node config")
	cc.expect(cc.do("GET", "/api/v1/admin/nodes/payments/config/audit", admin, nil), 200, "node audit")
	cc.expect(cc.do("GET", "/api/v1/admin/change-requests?status=all", admin, nil), 200, "change requests")

	// Investigations.
	cc.expect(cc.do("GET", "/api/v1/agents", payments, nil), 200, "agents")
	cc.expect(cc.do("POST", "/api/v1/agents/run", payments, map[string]any{"message": "x"}), 400, "run without agent")
	run := cc.expect(cc.do("POST", "/api/v1/agents/run", payments, map[string]any{
		"agent_name": "planner", "message": "checkout pods restarting", "context": map[string]string{"namespace": "shop"}, "async": true}), 202, "async run")
	id, _ := run.body["investigation_id"].(string)
	var final *response
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		final = cc.expect(cc.do("GET", "/api/v1/agents/status/"+id, payments, nil), 200, "status")
		if s := final.body["status"]; s == "completed" || s == "failed" || s == "cancelled" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if final.body["status"] != "completed" {
		t.Fatalf("investigation ended %s", final.raw)
	}
	cc.expect(cc.do("GET", "/api/v1/agents/status/"+id+"/events", payments, nil), 200, "events")
	cc.expect(cc.do("POST", "/api/v1/agents/status/"+id+"/cancel", payments, nil), 409, "cancel a final one")
	cc.expect(cc.do("GET", "/api/v1/agents/status/inv_missing", payments, nil), 404, "unknown investigation")
	cc.expect(cc.do("GET", "/api/v1/agents/investigations?limit=5", payments, nil), 200, "list")
	cc.expect(cc.do("GET", "/api/v1/agents/investigations?limit=500", payments, nil), 400, "list limit")
	sync := cc.do("POST", "/api/v1/agents/run", payments, map[string]any{"agent_name": "planner", "message": "checkout errors"})
	if sync.status != 200 {
		t.Errorf("sync run: %d %s", sync.status, sync.raw)
	}
	// The run limit is 3 per minute: this one or the next is refused.
	second := cc.do("POST", "/api/v1/agents/run", payments, map[string]any{"agent_name": "planner", "message": "again", "async": true})
	if second.status == 202 {
		if c := cc.do("POST", "/api/v1/agents/status/"+second.body["investigation_id"].(string)+"/cancel", payments, nil); c.status != 200 && c.status != 409 {
			t.Errorf("cancel: %d %s", c.status, c.raw)
		}
		second = cc.do("POST", "/api/v1/agents/run", payments, map[string]any{"agent_name": "planner", "message": "again"})
	}
	cc.expect(second, 429, "over the run limit")
	if second.header.Get("Retry-After") == "" || second.header.Get("X-RateLimit-Limit") != "3" {
		t.Errorf("429 headers: %v", second.header)
	}

	// Metrics: refused to teams, and they moved.
	cc.expect(cc.do("GET", "/metrics", "", nil), 401, "metrics anonymous")
	cc.expect(cc.do("GET", "/metrics", payments, nil), 403, "metrics for a team")
	mr := cc.expect(cc.do("GET", "/metrics", admin, nil), 200, "metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(mr.raw))
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	sum := func(name string, labels map[string]string) float64 {
		var v float64
		for _, m := range fams[name].GetMetric() {
			ok := true
			for k, want := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == want)
				}
				ok = ok && found
			}
			if ok {
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
		return v
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"rootcause_http_requests_total", map[string]string{"route": "/api/v1/agents/run", "status": "202"}, 1},
		{"rootcause_http_requests_total", map[string]string{"route": "/api/v1/auth/me", "status": "401"}, 2},
		{"rootcause_rate_limit_rejections_total", map[string]string{"class": "run"}, 1},
		{"rootcause_investigations_total", map[string]string{"state": "completed", "agent": "planner"}, 2},
		{"rootcause_investigations_total", map[string]string{"state": "pending"}, 2},
		{"rootcause_investigation_duration_seconds", map[string]string{"agent": "planner", "state": "completed"}, 2},
		{"rootcause_tool_calls_total", map[string]string{"outcome": "ok"}, 1},
		{"rootcause_db_transaction_duration_seconds", map[string]string{"kind": "write"}, 1},
		{"rootcause_db_size_bytes", nil, 1},
	} {
		if got := sum(c.name, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want >= %v", c.name, c.labels, got, c.min)
		}
	}
	if fams["rootcause_investigation_queue_depth"] == nil {
		t.Error("no queue depth gauge")
	}

	if chk.Count() < 45 {
		t.Errorf("only %d answers validated", chk.Count())
	}
	t.Logf("validated %d answers:\n%s", chk.Count(), chk.Summary())

	// The JSON log: one line per request with the fields, never a secret.
	srv.stop()
	logs := srv.log.String()
	var lines int
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" {
			continue
		}
		lines++
		for _, k := range []string{"request_id", "route", "method", "status", "latency", "principal"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("request log line without %s: %s", k, line)
			}
		}
	}
	if lines < chk.Count() {
		t.Errorf("%d request log lines for %d requests", lines, chk.Count())
	}
	for _, secret := range []string{adminTok, secretOf(adminTok), strings.TrimPrefix(payments, "Bearer "), secretOf(strings.TrimPrefix(payments, "Bearer ")), "Bearer "} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

func secretOf(tok string) string {
	_, s, _ := strings.Cut(tok, ".")
	return s
}

// TestExampleConfigAccepted: `rootcause serve --config
// packaging/rootcause.example.yaml` starts with the file unchanged (only the
// data dir and address are overridden by flags, as an operator's test run
// would).
func TestExampleConfigAccepted(t *testing.T) {
	example, err := filepath.Abs(filepath.Join("..", "packaging", "rootcause.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(example); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir, "ROOTCAUSE_CONFIG="+example)
	admin := "Bearer " + issue(t, dir, "--admin")
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", admin, nil); r.status != 200 {
		t.Fatalf("auth/me: %d %s", r.status, r.raw)
	}
	srv.stop()
	// The example keeps log.format text: logfmt lines, not JSON.
	first := strings.SplitN(strings.TrimSpace(srv.log.String()), "\n", 2)[0]
	if !strings.HasPrefix(first, "time=") || !strings.Contains(first, "level=") {
		t.Errorf("log line is not in the text format of the example config: %s", first)
	}
}
