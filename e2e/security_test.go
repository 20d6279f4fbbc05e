package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeProm is a Prometheus that records the Authorization header of every
// request and answers with empty results. With echo set, its errors quote
// the Authorization header back, as a careless proxy's error page would.
type fakeProm struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
	echo  bool
}

func newFakeProm(t *testing.T, echo bool) *fakeProm {
	p := &fakeProm{echo: echo}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		p.auths = append(p.auths, r.Header.Get("Authorization"))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if p.echo {
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]any{"status": "error", "errorType": "bad_data",
				"error": "refused request with Authorization: " + r.Header.Get("Authorization")})
			w.Write(b)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/query"):
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		case strings.HasSuffix(r.URL.Path, "/query_range"):
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		default:
			io.WriteString(w, `{"status":"success","data":[]}`)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *fakeProm) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auths...)
}

// TestSecretsNeverLeak: tokens, a webhook signing secret and the resolved
// value of a secret reference (tools.prometheus.headers.Authorization =
// env:...) are used for real, then looked for in every API answer, the
// config audit history, the server's log and the db file: none may appear.
func TestSecretsNeverLeak(t *testing.T) {
	const promSecret = "Bearer e2e-prom-credential-4b7f1d0c9a"
	dir := t.TempDir()
	// The fake Prometheus servers listen on loopback, which the outbound
	// guard refuses unless outbound.allow names it.
	s := startServer(t, dir, "ROOTCAUSE_E2E_PROM_AUTH="+promSecret, "ROOTCAUSE_OUTBOUND_ALLOW=127.0.0.1")
	admin := issue(t, dir, "--admin")
	auth := "Bearer " + admin

	var answers []string
	keep := func(r *response) *response {
		answers = append(answers, string(r.raw))
		for k, v := range r.header {
			answers = append(answers, k+": "+strings.Join(v, ","))
		}
		return r
	}

	prom := newFakeProm(t, false)
	echo := newFakeProm(t, true)
	cfg := func(url string) map[string]any {
		return map[string]any{"tools": map[string]any{"prometheus": map[string]any{
			"url": url, "headers": map[string]any{"Authorization": "env:ROOTCAUSE_E2E_PROM_AUTH"}}}}
	}
	// An admin's env: secret goes only to an address an admin chose above
	// the team (a team may rewrite its own level): each Prometheus is
	// configured on a group, the teams below it.
	underGroup := func(group, team, url string, write bool) string {
		mustCLI(t, dir, "node", "add", group, "--parent", "default", "--kind", "group")
		if r := call(t, "PUT", s.url+"/api/v1/admin/nodes/"+group+"/config", auth, cfg(url)); r.status != http.StatusOK {
			t.Fatalf("configuring %s: %d %s", group, r.status, r.raw)
		}
		mustCLI(t, dir, "node", "add", team, "--parent", group, "--kind", "team")
		args := []string{"--team", team}
		if write {
			args = append(args, "--write")
		}
		return "Bearer " + issue(t, dir, args...)
	}
	team := underGroup("metrics-group", "metrics", prom.URL, true)
	echoTeam := underGroup("echo-group", "echoing", echo.URL, false)

	// A team cannot point a reference at the server's environment itself.
	if r := keep(call(t, "PUT", s.url+"/api/v1/config/me", team, map[string]any{"tools": map[string]any{"prometheus": map[string]any{
		"headers": map[string]any{"X-Other": "env:HOME"}}}})); r.status != http.StatusBadRequest {
		t.Errorf("team setting an env: reference: %d %s", r.status, r.raw)
	}
	// A plain value in a secret field is refused.
	if r := keep(call(t, "PUT", s.url+"/api/v1/admin/nodes/metrics/config", auth, map[string]any{"tools": map[string]any{"prometheus": map[string]any{
		"headers": map[string]any{"Authorization": "Bearer plain-value"}}}})); r.status != http.StatusBadRequest {
		t.Errorf("plain secret value: %d %s", r.status, r.raw)
	}

	// Tokens issued over the API; a webhook signing secret.
	r := call(t, "POST", s.url+"/api/v1/admin/tokens", auth, map[string]any{"kind": "team", "team": "metrics", "write": true})
	apiTeam, _ := r.body["token"].(string)
	r = call(t, "POST", s.url+"/api/v1/admin/tokens", auth, map[string]any{"kind": "admin"})
	apiAdmin, _ := r.body["token"].(string)
	r = call(t, "POST", s.url+"/api/v1/admin/teams/metrics/webhook-secret", auth, map[string]any{})
	whsec, _ := r.body["secret"].(string)
	if apiTeam == "" || apiAdmin == "" || whsec == "" {
		t.Fatalf("issuing: team %q admin %q webhook %q", apiTeam, apiAdmin, whsec)
	}

	// Investigations that use the reference: the credential reaches
	// Prometheus (so the check below is not vacuous) and nothing else.
	var ids []string
	for _, tc := range []struct{ auth, agent string }{{team, "metrics_agent"}, {"Bearer " + apiTeam, "investigation_agent"}, {echoTeam, "metrics_agent"}} {
		r := keep(call(t, "POST", s.url+"/api/v1/agents/run", tc.auth, map[string]any{"agent_name": tc.agent, "message": "p99 latency of checkout is up"}))
		id, _ := r.body["investigation_id"].(string)
		if id == "" {
			t.Fatalf("run: %d %s", r.status, r.raw)
		}
		ids = append(ids, id)
		keep(pollFinal(t, s, tc.auth, id))
		keep(call(t, "GET", s.url+"/api/v1/agents/status/"+id+"/events", tc.auth, nil))
	}
	if got := prom.seen(); len(got) == 0 || got[0] != promSecret {
		t.Fatalf("prometheus saw Authorization %q, want the resolved reference", got)
	}
	if len(echo.seen()) == 0 {
		t.Fatal("the echoing prometheus was never queried")
	}

	// Every read a team or an admin can make.
	for _, p := range []string{"/api/v1/auth/me", "/api/v1/config/me/effective", "/api/v1/config/me/raw", "/api/v1/config/me/audit",
		"/api/v1/config/me/pending", "/api/v1/agents/investigations", "/api/v1/agents", "/api/v1/webhooks/deliveries"} {
		keep(call(t, "GET", s.url+p, team, nil))
		keep(call(t, "GET", s.url+p, echoTeam, nil))
	}
	for _, p := range []string{"/api/v1/auth/me", "/api/v1/admin/tokens", "/api/v1/admin/nodes", "/api/v1/admin/nodes/metrics/config",
		"/api/v1/admin/nodes/metrics/config/audit", "/api/v1/admin/nodes/echoing/config/audit", "/api/v1/admin/change-requests?status=all",
		"/api/v1/config/me/effective?team=metrics", "/api/v1/config/me/audit?team=metrics", "/api/v1/agents/investigations?team=echoing",
		"/metrics", "/api/v1/admin/tool-servers"} {
		keep(call(t, "GET", s.url+p, auth, nil))
		keep(call(t, "GET", s.url+p, "Bearer "+apiAdmin, nil))
	}
	// Failed authentications with near-miss credentials.
	keep(call(t, "GET", s.url+"/api/v1/auth/me", "Bearer "+apiTeam+"x", nil))
	keep(call(t, "GET", s.url+"/api/v1/auth/me", "Bearer admin."+secretOf(admin)+"x", nil))
	// CLI listings.
	answers = append(answers, mustCLI(t, dir, "token", "list", "--json"), mustCLI(t, dir, "node", "list", "--json"))
	s.stop()

	secrets := map[string]string{
		"resolved reference":   promSecret,
		"reference value core": strings.TrimPrefix(promSecret, "Bearer "),
		"CLI admin token":      admin,
		"CLI admin secret":     secretOf(admin),
		"API team token":       apiTeam,
		"API team secret":      secretOf(apiTeam),
		"API admin secret":     secretOf(apiAdmin),
		"team token secret":    secretOf(strings.TrimPrefix(team, "Bearer ")),
		"webhook secret":       strings.TrimPrefix(whsec, "whsec_"),
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var dbBytes []byte
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(f)
			dbBytes = append(dbBytes, b...)
		}
	}
	logs := s.log.String()
	for what, sec := range secrets {
		for i, a := range answers {
			if strings.Contains(a, sec) {
				t.Errorf("%s appears in answer %d: %.400s", what, i, a)
			}
		}
		if strings.Contains(logs, sec) {
			i := strings.Index(logs, sec)
			t.Errorf("%s appears in the server log: …%s…", what, logs[max(i-200, 0):min(i+len(sec)+50, len(logs))])
		}
		if bytes.Contains(dbBytes, []byte(sec)) {
			t.Errorf("%s appears in the data directory's files", what)
		}
	}
	if strings.Contains(logs, "Bearer ") {
		t.Error("an Authorization value reached the log")
	}
	_ = fmt.Sprint(ids)
}
