package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/agent/toolserver"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
)

// Attacks of a hostile team and an anonymous client (docs/security.md).
// Everything runs on 127.0.0.1: the "internal" services a team must not
// reach and the receivers it controls are local servers, told apart by
// the server's outbound.allow list.

// recorder is an HTTP server that records the Authorization header of
// every request and answers like a Prometheus with no data.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecorder(t *testing.T) *recorder {
	rc := &recorder{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.auth = append(rc.auth, r.Header.Get("Authorization"))
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *recorder) seen() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.auth...)
}

// mapSecrets resolves references from a map (the server's Vault and
// environment as the test sets them up).
type mapSecrets map[string]string

func (m mapSecrets) Resolve(_ context.Context, ref string) (string, error) {
	if v, ok := m[ref]; ok {
		return v, nil
	}
	return "", fmt.Errorf("secret not found")
}

// realRuntime wires the runtime the way serve does: each team's
// environment built from its lineage by agent.BuildTeamEnvironment, with
// the given resolver and guard. The engine queries Prometheus when the team
// has it and reports the setup errors in the summary.
func realRuntime(t *testing.T, h *harness, res mapSecrets, guard *outbound.Guard) *agent.Runtime {
	t.Helper()
	eng := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		env := run.Env()
		if env.Sources != nil && env.Sources.Metrics != nil {
			if _, err := env.Sources.Metrics.Query(ctx, "up", time.Now()); err != nil {
				return nil, err
			}
		}
		return &finding.Result{Summary: "gaps: " + strings.Join(env.SetupErrors, "; "), RootCause: finding.RootCause{Description: "n/a", Confidence: 10}}, nil
	})
	rt := startRuntime(t, h, eng, func(ctx context.Context, team string) (*agent.Environment, error) {
		lin, err := h.db.ConfigLineage(ctx, team, true)
		if err != nil {
			return nil, err
		}
		docs := make([]map[string]any, 0, len(lin))
		for _, n := range lin {
			docs = append(docs, n.Own)
		}
		return agent.BuildTeamEnvironment(ctx, team, docs, agent.EnvironmentOptions{Resolver: res, Outbound: guard})
	})
	h.srv.cfg.Investigations = rt
	return rt
}

func withOutbound(allow ...string) harnessOption {
	return func(c *Config) {
		c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1, AuthFailuresPerIP: -1}
		c.Outbound = outbound.New(outbound.MustAllowlist(allow...))
		c.WebhookAllow = outbound.MustAllowlist(allow...)
	}
}

// errorDetail returns error.details.error of a 400 validation_error.
func errorDetail(t *testing.T, r response, field string) string {
	t.Helper()
	e := expectError(t, r, 400, "validation_error")
	d, _ := e["details"].(map[string]any)
	if d["field"] != field {
		t.Errorf("details.field = %v, want %s (%s)", d["field"], field, r.body)
	}
	msg, _ := d["error"].(string)
	return msg
}

// Item 1: every internal form of an address a team sets is refused when
// saved, by the team and by an admin alike, with one message that tells
// nothing about the target (an open and a closed port answer the same).
func TestAttackOutboundAddressesRefusedAtSave(t *testing.T) {
	h := newHarness(t, withOutbound())
	open, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, _ := net.Listen("tcp4", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	openPort := open.Addr().(*net.TCPAddr).Port
	urls := []string{
		"http://127.0.0.1:" + strconv.Itoa(openPort),
		"http://127.0.0.1:" + strconv.Itoa(closedPort),
		"http://localhost:" + strconv.Itoa(openPort),
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1:9090", "http://192.168.1.1", "http://172.16.0.1", "http://100.64.0.1",
		"http://[::1]:9090", "http://[::ffff:127.0.0.1]:9090", "http://[fd00::1]/", "http://[fe80::1]/",
		"http://2130706433:9090", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/", "http://0/",
		"http://0.0.0.0:9090",
	}
	for _, who := range []struct{ token, path string }{
		{"payments-write", "/api/v1/config/me"},
		{"admin", "/api/v1/admin/nodes/payments/config"},
		{"admin", "/api/v1/admin/nodes/acme/config"},
	} {
		for _, u := range urls {
			r := h.do(req{method: "PUT", path: who.path, token: who.token, body: `{"tools":{"prometheus":{"url":` + jsonString(t, u) + `}}}`})
			if msg := errorDetail(t, r, "tools.prometheus.url"); msg != "refused by the outbound guard" {
				t.Errorf("%s %s: details.error %q, want exactly the guard's refusal", who.token, u, msg)
			}
		}
		for _, d := range []string{"localhost", "127.0.0.1", "169.254.169.254", "2130706433", "0x7f.1", "[::1]", "metadata.localhost", "http://10.1.2.3/api/v3"} {
			r := h.do(req{method: "PUT", path: who.path, token: who.token, body: `{"tools":{"github":{"domain":` + jsonString(t, d) + `}}}`})
			if r.status == 200 {
				t.Errorf("%s: tools.github.domain %q accepted", who.token, d)
			}
		}
	}
	for _, ok := range []string{"https://prometheus.example.com", "http://93.184.216.34:9090/"} {
		r := h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"tools":{"prometheus":{"url":"` + ok + `"}}}`})
		mustStatus(t, r, 200)
	}
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"tools":{"github":{"domain":"ghe.example.com"}}}`}), 200)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"tools":{"github":{"domain":"ghe.example.com:8443"}}}`}), 200)
	errorDetail(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"tools":{"github":{"domain":"127.0.0.1:8443"}}}`}), "tools.github.domain")

	// With outbound.allow naming loopback, an admin's internal Prometheus
	// is accepted.
	h2 := newHarness(t, withOutbound("127.0.0.1"))
	mustStatus(t, h2.do(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin",
		body: `{"tools":{"prometheus":{"url":"http://127.0.0.1:` + strconv.Itoa(openPort) + `"}}}`}), 200)
}

// Item 1: a team that points an integration at its own receiver never
// receives a secret an admin configured above it, nor another team's
// secret by Vault path. The team's own granted secret does reach it, and
// the admin's secret does reach the admin's address (the test can fail).
func TestAttackSecretsNeverFollowATeamAddress(t *testing.T) {
	h := newHarness(t, withOutbound("127.0.0.1"))
	legit, attacker := newRecorder(t), newRecorder(t)
	res := mapSecrets{
		"env:ORG_PROM":                          "Bearer org-prom-secret",
		"vault:secret/teams/search/slack#token": "xoxb-search-secret",
		"vault:secret/teams/payments/prom#t":    "Bearer payments-own",
	}
	rt := realRuntime(t, h, res, outbound.New(outbound.MustAllowlist("127.0.0.1")))
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin",
		body: `{"secret_scopes":["vault:secret/teams/{team}/"],"tools":{"prometheus":{"url":"` + legit.srv.URL + `","headers":{"Authorization":"env:ORG_PROM"}}}}`}), 200)

	run := func(team string) {
		t.Helper()
		inv, err := rt.Submit(context.Background(), agent.SubmitRequest{Team: team, RequestedBy: "t", AgentName: "metrics_agent", Message: "why"})
		if err != nil {
			t.Logf("%s: run refused: %v", team, err)
			return
		}
		rt.Wait(context.Background(), inv.ID)
	}
	// The attacker team redirects the org's Prometheus to itself.
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"tools":{"prometheus":{"url":"` + attacker.srv.URL + `"}}}`}), 200)
	run("payments")
	// ... and asks for another team's Vault secret: refused when saved ...
	r := h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"tools":{"prometheus":{"headers":{"Authorization":"vault:secret/teams/search/slack#token"}}}}`})
	if msg := errorDetail(t, r, "tools.prometheus.headers.Authorization"); !strings.Contains(msg, "secret_scopes") {
		t.Errorf("out-of-scope vault reference: %q", msg)
	}
	r = h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"tokens_vault_path":{"slack":"vault:secret/teams/search/slack#token"}}`})
	errorDetail(t, r, "tokens_vault_path.slack")
	// ... and when written past validation (an older database), refused
	// when resolved.
	if _, err := h.db.PatchNodeConfig(context.Background(), "payments", map[string]any{"tools": map[string]any{"prometheus": map[string]any{
		"headers": map[string]any{"Authorization": "vault:secret/teams/search/slack#token"}}}}, db.Actor{ID: "test"}, nil); err != nil {
		t.Fatal(err)
	}
	run("payments")
	for _, a := range attacker.seen() {
		if strings.Contains(a, "org-prom-secret") || strings.Contains(a, "xoxb-search-secret") {
			t.Fatalf("the attacker's receiver got a secret: %q", a)
		}
	}
	// The team's own granted secret is fine at its own address.
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"tools":{"prometheus":{"headers":{"Authorization":"vault:secret/teams/payments/prom#t"}}}}`}), 200)
	run("payments")
	if got := attacker.seen(); len(got) == 0 || got[len(got)-1] != "Bearer payments-own" {
		t.Errorf("the team's own secret did not reach its own address: %q", got)
	}
	// Team search, with nothing overridden, uses the admin's address and
	// secret.
	run("search")
	if got := legit.seen(); len(got) == 0 || got[len(got)-1] != "Bearer org-prom-secret" {
		t.Errorf("the admin's address did not get the admin's secret: %q", got)
	}
}

// Item 3: one anonymous client failing from the proxy's address does not
// lock anyone out; its failures are slowed; with trusted_proxies the
// failures are counted per forwarded client.
func TestAttackFailureLimiterNeverRefusesValidTokens(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1, AuthFailuresPerIP: 30}
		c.TrustedProxies = nil
	})
	for i := range 40 {
		h.do(req{method: "GET", path: "/api/v1/auth/me", token: "", header: map[string]string{"Authorization": "Bearer bad-" + strconv.Itoa(i)}})
	}
	r := h.do(req{method: "GET", path: "/api/v1/auth/me", header: map[string]string{"Authorization": "Bearer still-bad"}})
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("41st failure: %d, want 429 with Retry-After", r.status)
	}
	for _, tok := range []string{"payments-read", "payments-write", "admin"} {
		for range 5 {
			if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.status != 200 {
				t.Fatalf("valid %s token after the flood: %d %s", tok, r.status, r.body)
			}
		}
	}
	// An untrusted peer's X-Forwarded-For does not reset its count.
	r = h.do(req{method: "GET", path: "/api/v1/auth/me", header: map[string]string{"Authorization": "Bearer bad", "X-Forwarded-For": "203.0.113.9"}})
	if r.status != 429 {
		t.Errorf("X-Forwarded-For from an untrusted peer moved the caller: %d", r.status)
	}

	// Behind a trusted proxy, failures count per forwarded client.
	hp := newHarness(t, func(c *Config) {
		c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1, AuthFailuresPerIP: 5}
		c.TrustedProxies = mustPrefixes("127.0.0.0/8", "::1/128")
	})
	bad := func(client string) int {
		return hp.do(req{method: "GET", path: "/api/v1/auth/me", header: map[string]string{"Authorization": "Bearer bad", "X-Forwarded-For": "198.51.100.1, " + client}}).status
	}
	for range 6 {
		bad("203.0.113.7")
	}
	if s := bad("203.0.113.7"); s != 429 {
		t.Errorf("the flooding client: %d, want 429", s)
	}
	if s := bad("203.0.113.8"); s != 401 {
		t.Errorf("another client behind the same proxy: %d, want 401", s)
	}
	if r := hp.do(req{method: "GET", path: "/api/v1/auth/me", token: "admin", header: map[string]string{"X-Forwarded-For": "203.0.113.7"}}); r.status != 200 {
		t.Errorf("a valid token from the flooding client: %d", r.status)
	}
}

// Item 6: two Authorization headers are refused, whatever their order.
func TestAttackTwoAuthorizationHeaders(t *testing.T) {
	h := newHarness(t)
	for _, pair := range [][2]string{{h.tokens["admin"], "bad"}, {"bad", h.tokens["admin"]}, {h.tokens["payments-read"], h.tokens["admin"]}} {
		r, err := http.NewRequest("GET", h.url+"/api/v1/auth/me", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Add("Authorization", "Bearer "+pair[0])
		r.Header.Add("Authorization", "Bearer "+pair[1])
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var body ErrorBody
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || body.Error.Code != db.EINVALID || !strings.Contains(body.Error.Message, "Authorization") || body.Error.RequestID == "" {
			t.Errorf("two Authorization headers: %d %+v", resp.StatusCode, body.Error)
		}
	}
}

// Item 4: evidence_bundle is validated when saved, and a bundle that goes
// away fails the run with data_source_unavailable, never a 500.
func TestAttackEvidenceBundle(t *testing.T) {
	h := newHarness(t, withOutbound())
	realRuntime(t, h, mapSecrets{}, nil)
	dir := t.TempDir()
	bundleDir := filepath.Join(dir, "incident")
	os.MkdirAll(filepath.Join(bundleDir, "logs"), 0o755)
	os.WriteFile(filepath.Join(bundleDir, "logs", "app.log"), []byte("2026-03-14T10:00:00Z error: disk full\n"), 0o644)
	os.WriteFile(filepath.Join(bundleDir, "bundle.json"), []byte(`{"captured_at":"2026-03-14T10:05:00Z"}`), 0o644)
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	link := filepath.Join(dir, "proc-link")
	os.Symlink("/proc/self", link)
	for _, p := range []string{"relative/dir", "../../../../etc", "/proc/self", "/proc/self/cwd", "/sys/kernel", "/dev",
		filepath.Join(dir, "missing"), empty, file, link, bundleDir + "/../incident"} {
		r := h.do(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"evidence_bundle":` + jsonString(t, p) + `}`})
		errorDetail(t, r, "evidence_bundle")
	}
	// A team may not set it at all.
	r := h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"evidence_bundle":` + jsonString(t, bundleDir) + `}`})
	errorDetail(t, r, "evidence_bundle")

	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"evidence_bundle":` + jsonString(t, bundleDir) + `}`}), 200)
	mustStatus(t, h.do(req{method: "POST", path: "/api/v1/agents/run", token: "payments-write", body: `{"agent_name":"planner","message":"what broke?"}`}), 200)

	os.RemoveAll(bundleDir)
	r = h.do(req{method: "POST", path: "/api/v1/agents/run", token: "payments-write", body: `{"agent_name":"planner","message":"what broke?"}`})
	e := expectError(t, r, 502, "data_source_unavailable")
	if msg, _ := e["message"].(string); strings.Contains(msg, dir) || !strings.Contains(msg, "evidence bundle") {
		t.Errorf("message %q: want it to name the evidence bundle, not the server path", msg)
	}
	r = h.do(req{method: "POST", path: "/api/v1/agents/run", token: "payments-write", body: `{"agent_name":"planner","message":"again","async":true}`})
	mustStatus(t, r, 202)
}

// Item 6: ambiguous or mis-encoded JSON is refused on every JSON route with
// 400 naming the problem; unknown top-level fields of the run body too.
func TestAttackAmbiguousJSON(t *testing.T) {
	h := newHarness(t, withOutbound())
	realRuntime(t, h, mapSecrets{}, nil)
	routes := []struct{ method, path, token string }{
		{"PUT", "/api/v1/config/me", "payments-write"},
		{"PUT", "/api/v1/admin/nodes/payments/config", "admin"},
		{"POST", "/api/v1/agents/run", "payments-write"},
		{"POST", "/api/v1/admin/nodes", "admin"},
		{"POST", "/api/v1/admin/tokens", "admin"},
	}
	bodies := []struct{ body, ct, want string }{
		{`{"a":1,"a":2}`, "application/json", "duplicate key"},
		{`{"agent_name":"planner","message":"x","MESSAGE":"y"}`, "application/json", "duplicate key"},
		{`{"x":{"k":1,"\u006b":2}}`, "application/json", "duplicate key"},
		{`{"message":"\ud800"}`, "application/json", "lone UTF-16 surrogate"},
		{`{"message":"\udc00\ud800"}`, "application/json", "lone UTF-16 surrogate"},
		{`{"message":"x"}`, "application/json; charset=iso-8859-1", "charset"},
		{`{"message":"x"}`, "application/json; charset=utf-16", "charset"},
	}
	for _, rt := range routes {
		for _, b := range bodies {
			r := h.do(req{method: rt.method, path: rt.path, token: rt.token, body: b.body, header: map[string]string{"Content-Type": b.ct}})
			e := expectError(t, r, 400, db.EINVALID)
			if msg, _ := e["message"].(string); !strings.Contains(msg, b.want) {
				t.Errorf("%s %s %s: message %q, want %q", rt.method, rt.path, b.body, msg, b.want)
			}
		}
	}
	r := h.do(req{method: "POST", path: "/api/v1/agents/run", token: "payments-write", body: `{"agent_name":"planner","message":"x","callback":"http://x"}`})
	if e := expectError(t, r, 400, db.EINVALID); !strings.Contains(fmt.Sprint(e["message"]), "callback") {
		t.Errorf("unknown run field: %v", e["message"])
	}
	// A valid surrogate pair is fine.
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"smile \ud83d\ude00"}`}), 200)
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}

// rpc posts one JSON-RPC request to the A2A endpoint as token.
func rpc(t *testing.T, base, token, method, params string) (int, map[string]any, http.Header) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	r, _ := http.NewRequest("POST", base+"/api/v1/a2a", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp.Header
}

func a2aSend(text string) string {
	return `{"message":{"kind":"message","messageId":"m-` + strconv.FormatInt(time.Now().UnixNano(), 36) + `","role":"user","parts":[{"kind":"text","text":` + strconv.Quote(text) + `}]},"configuration":{"blocking":false}}`
}

// rpcError returns the JSON-RPC error object of an answer, without data
// (which carries the request id).
func rpcError(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return ""
	}
	return fmt.Sprintf("%v %v", e["code"], e["message"])
}

// Item 2: another team's A2A task is indistinguishable from a missing
// one, for tasks/get, tasks/cancel and a follow-up message/send, and none
// of them touches it. Tasks survive a restart; one cut off by it reads as
// failed.
func TestAttackA2ATaskOwnership(t *testing.T) {
	h := newHarness(t, withOutbound())
	h.contract = nil
	release := make(chan struct{})
	var once sync.Once
	rel := func() { once.Do(func() { close(release) }) }
	t.Cleanup(rel)
	rt := startRuntime(t, h, engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		if strings.Contains(req.Message, "slow") {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &finding.Result{Summary: "SEARCH-SECRET-ANSWER " + req.Message, RootCause: finding.RootCause{Description: "disk full", Confidence: 80}}, nil
	}), func(ctx context.Context, team string) (*agent.Environment, error) {
		return probeEnvironment(), nil
	})
	h.srv.cfg.Investigations = rt

	// Team search starts a long task.
	st, m, hdr := rpc(t, h.url, h.tokens["search-write"], "message/send", a2aSend("search is slow"))
	task, _ := m["result"].(map[string]any)
	taskID, _ := task["id"].(string)
	if st != 200 || taskID == "" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("search's message/send: %d %v (Content-Type %q)", st, m, hdr.Get("Content-Type"))
	}
	// Wait until the task's investigation runs.
	searchInvs := func() []*db.Investigation {
		invs, _, err := h.db.ListInvestigations(context.Background(), db.InvestigationFilter{Team: "search", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return invs
	}
	for deadline := time.Now().Add(5 * time.Second); len(searchInvs()) == 0 || searchInvs()[0].Status != db.StatusRunning; {
		if time.Now().After(deadline) {
			t.Fatalf("search's investigation never ran: %+v", searchInvs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Payments, with search's task id and with an unknown one.
	ghost := "0198c7d0-0000-7000-8000-000000000000"
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		_, theirs, _ := rpc(t, h.url, h.tokens["payments-write"], method, `{"id":"`+taskID+`"}`)
		_, missing, _ := rpc(t, h.url, h.tokens["payments-write"], method, `{"id":"`+ghost+`"}`)
		if rpcError(theirs) == "" || rpcError(theirs) != rpcError(missing) {
			t.Errorf("%s of another team's task: %v; of a missing one: %v", method, theirs, missing)
		}
		if strings.Contains(fmt.Sprint(theirs), "SEARCH") || strings.Contains(fmt.Sprint(theirs), "slow") {
			t.Errorf("%s leaked search's task: %v", method, theirs)
		}
	}
	cont := `{"message":{"kind":"message","messageId":"m-x","taskId":"` + taskID + `","role":"user","parts":[{"kind":"text","text":"and now?"}]}}`
	_, theirs, _ := rpc(t, h.url, h.tokens["payments-write"], "message/send", cont)
	if !strings.HasPrefix(rpcError(theirs), "-32001") {
		t.Errorf("message/send on another team's task: %v", theirs)
	}
	// Search's investigation is still running, untouched.
	time.Sleep(50 * time.Millisecond) // a cancel would have landed by now
	if invs := searchInvs(); len(invs) != 1 || invs[0].Status != db.StatusRunning {
		t.Fatalf("search's investigation after payments' cancel: %+v", invs)
	}

	// A restart while it runs: the runtime stops, a new one recovers the
	// database (the running investigation becomes failed, interrupted),
	// and a new server reads the task from the database.
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 2*time.Second)
	rt.Stop(stopCtx)
	cancelStop()
	rt2 := startRuntime(t, h, engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		return &finding.Result{Summary: "SEARCH-SECRET-ANSWER " + req.Message, RootCause: finding.RootCause{Description: "disk full", Confidence: 80}}, nil
	}), func(ctx context.Context, team string) (*agent.Environment, error) { return probeEnvironment(), nil })
	h.srv.cfg.Investigations = rt2
	cfg2 := h.srv.cfg
	srv2 := New(cfg2)
	ts2 := httptest.NewServer(srv2.Handler())
	defer ts2.Close()
	_, m, _ = rpc(t, ts2.URL, h.tokens["search-write"], "tasks/get", `{"id":"`+taskID+`"}`)
	if state := fmt.Sprint(m["result"].(map[string]any)["status"].(map[string]any)["state"]); state != "failed" || !strings.Contains(fmt.Sprint(m), "interrupted") {
		t.Errorf("a task cut off by a restart reads %q (%v), want failed as its interrupted investigation", state, m)
	}
	_, theirs, _ = rpc(t, ts2.URL, h.tokens["payments-write"], "tasks/get", `{"id":"`+taskID+`"}`)
	if !strings.HasPrefix(rpcError(theirs), "-32001") {
		t.Errorf("after a restart, another team's task: %v", theirs)
	}

	// A completed task is read back by its team, and by its team only,
	// from a server started later.
	rel()
	st, m, _ = rpc(t, ts2.URL, h.tokens["search-write"], "message/send", `{"message":{"kind":"message","messageId":"m-done","role":"user","parts":[{"kind":"text","text":"quick question"}]}}`)
	done, _ := m["result"].(map[string]any)
	doneID, _ := done["id"].(string)
	if st != 200 || doneID == "" {
		t.Fatalf("blocking message/send: %d %v", st, m)
	}
	srv3 := New(cfg2)
	ts3 := httptest.NewServer(srv3.Handler())
	defer ts3.Close()
	_, m, _ = rpc(t, ts3.URL, h.tokens["search-write"], "tasks/get", `{"id":"`+doneID+`"}`)
	if !strings.Contains(fmt.Sprint(m), "SEARCH-SECRET-ANSWER") || fmt.Sprint(m["result"].(map[string]any)["status"].(map[string]any)["state"]) != "completed" {
		t.Errorf("completed task after a restart: %v", m)
	}
	_, theirs, _ = rpc(t, ts3.URL, h.tokens["payments-write"], "tasks/get", `{"id":"`+doneID+`"}`)
	if strings.Contains(fmt.Sprint(theirs), "SEARCH-SECRET-ANSWER") || !strings.HasPrefix(rpcError(theirs), "-32001") {
		t.Errorf("another team read a completed task: %v", theirs)
	}
}

func probeEnvironment() *agent.Environment {
	probe := tools.Tool{Spec: tools.Spec{Name: "probe", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true, Agents: []string{tools.AgentK8s, tools.AgentPlanner}},
		Run: func(context.Context, *tools.Env, json.RawMessage) (any, error) { return "ok", nil }}
	return &agent.Environment{Config: map[string]any{}, Catalog: tools.Builtin().With([]tools.Tool{probe}), Env: &tools.Env{Sources: &evidence.Sources{}}}
}

// Item 6: the protocol endpoints answer transport errors with the API's
// error body and request_id, and bad JSON with a JSON-RPC parse error that
// carries the request id; answers are labelled application/json.
func TestAttackProtocolErrorForms(t *testing.T) {
	h := newHarness(t, withOutbound())
	h.contract = nil
	realRuntime(t, h, mapSecrets{}, nil)
	post := func(path, ct, accept, body string) (int, http.Header, map[string]any) {
		r, _ := http.NewRequest("POST", h.url+path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+h.tokens["payments-write"])
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, resp.Header, m
	}
	apiError := func(what string, st int, hdr http.Header, m map[string]any, status int) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if st != status || e == nil || e["request_id"] == nil || e["request_id"] == "" || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %v, want %d with the API's error body", what, st, hdr.Get("Content-Type"), m, status)
		}
	}
	rpcParse := func(what string, st int, m map[string]any) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if st != 400 || m["jsonrpc"] != "2.0" || e["code"] != float64(-32700) || data["request_id"] == nil {
			t.Errorf("%s: %d %v, want 400 and a JSON-RPC parse error with data.request_id", what, st, m)
		}
	}
	const both = "application/json, text/event-stream"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, path := range []string{"/api/v1/mcp", "/api/v1/a2a"} {
		st, hdr, m := post(path, "text/plain", both, init)
		apiError(path+" text/plain", st, hdr, m, 415)
		st, hdr, m = post(path, "application/json; charset=latin1", both, init)
		apiError(path+" latin1", st, hdr, m, 400)
		st, _, m = post(path, "application/json", both, `{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize"}`)
		rpcParse(path+" duplicate key", st, m)
		st, _, m = post(path, "application/json", both, `{"jsonrpc":"2.0","id":1,"method":"\ud800"}`)
		rpcParse(path+" lone surrogate", st, m)
	}
	st, hdr, m := post("/api/v1/mcp", "application/json", "text/html", init)
	apiError("mcp without the Accept it needs", st, hdr, m, 400)
	st, hdr, m = post("/api/v1/mcp", "application/json", both, init)
	if st != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("mcp initialize: %d %q %v", st, hdr.Get("Content-Type"), m)
	}
	st, hdr, m = post("/api/v1/a2a", "application/json", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`)
	if st != 200 || hdr.Get("Content-Type") != "application/json" || rpcError(m) == "" {
		t.Errorf("a2a tasks/get: %d %q %v", st, hdr.Get("Content-Type"), m)
	}
}

// Item 5: a team whose agents use a tool of a tool server defined at its
// group keeps being able to change anything else, even while the tool
// server is down; the group's server is known, listed and asked.
func TestAttackToolServerValidationNeverFreezesATeam(t *testing.T) {
	var toolsCalls atomic.Int64
	var down atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		switch r.URL.Path {
		case "/tools":
			toolsCalls.Add(1)
			fmt.Fprint(w, `{"tools":[{"name":"echo","description":"Echoes","parameters":{"type":"object"}}]}`)
		case "/health":
			fmt.Fprint(w, `{}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	var h *harness
	reg := toolserver.NewRegistry(toolserver.Options{
		Config: func(ctx context.Context) (map[string]any, error) { return effectiveOf(ctx, h, "acme") },
		Levels: func(ctx context.Context) ([]toolserver.LevelConfig, error) {
			var out []toolserver.LevelConfig
			for _, n := range []string{"acme", "platform"} {
				cfg, err := effectiveOf(ctx, h, n)
				if err != nil {
					return nil, err
				}
				out = append(out, toolserver.LevelConfig{Node: n, Config: cfg})
			}
			return out, nil
		},
		RefreshInterval: time.Millisecond,
	})
	defer reg.Close()
	h = newHarness(t, func(c *Config) {
		c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1}
		c.ToolServers = reg
		c.ToolServerTools = reg.ServerTools
		c.ToolServerToolsFor = reg.ServerToolsIn
	})
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/admin/nodes/platform/config", token: "admin",
		body: `{"tool_servers":{"tk":{"transport":"http","url":"` + ts.URL + `"}}}`}), 200)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"mcp_servers":["tk"],"agents":{"k8s_agent":{"enable_extra_tools":["tk:echo"]}}}`}), 200)
	if toolsCalls.Load() == 0 {
		t.Fatal("GET /tools was never called on the group's tool server")
	}
	r := h.do(req{path: "/api/v1/admin/tool-servers", token: "admin"})
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"tk"`) || !strings.Contains(string(r.body), `"defined_at":"platform"`) {
		t.Fatalf("admin tool-server list: %d %s", r.status, r.body)
	}
	mustStatus(t, h.do(req{method: "POST", path: "/api/v1/admin/tool-servers/tk/refresh", token: "admin"}), 200)

	// The tool server goes down; unrelated writes still pass, from the
	// team and from an admin, and so does re-sending the unchanged list.
	down.Store(true)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#incident"}`}), 200)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"feature_flags":{"require_approval":false}}`}), 200)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/admin/nodes/payments/config", token: "admin", body: `{"slack_group_to_ping":"@oncall"}`}), 200)
	mustStatus(t, h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"agents":{"k8s_agent":{"enable_extra_tools":["tk:echo"],"timeout":120}}}`}), 200)
	// A new name is still judged: unknown while the server cannot confirm it.
	r = h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"agents":{"k8s_agent":{"enable_extra_tools":["tk:echo","tk:nope"]}}}`})
	if msg := errorDetail(t, r, "agents.k8s_agent.enable_extra_tools"); !strings.Contains(msg, "tk:nope") {
		t.Errorf("new unknown tool: %q", msg)
	}
	down.Store(false)
	r = h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write",
		body: `{"agents":{"k8s_agent":{"enable_extra_tools":["tk:nope"]}}}`})
	errorDetail(t, r, "agents.k8s_agent.enable_extra_tools")
}

// effectiveOf merges node's lineage.
func effectiveOf(ctx context.Context, h *harness, node string) (map[string]any, error) {
	lin, err := h.db.ConfigLineage(ctx, node, true)
	if err != nil {
		return nil, err
	}
	docs := make([]map[string]any, 0, len(lin))
	for _, n := range lin {
		docs = append(docs, n.Own)
	}
	return mergeconf.Effective(docs...), nil
}
