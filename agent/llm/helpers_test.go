package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/llm/llmtest"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// Secrets that must never reach the model server.
const (
	testAPIKey      = "sk-test-APIKEY-0123456789abcdefXYZ"
	secretEnvValue  = "hunter2-resolved-db-password"
	secretBearer    = "abcdef0123456789bearerXYZ"
	secretAWSKey    = "AKIAIOSFODNN7EXAMPLE"
	secretResolved  = "vault-resolved-value-42"
	secretSettings  = "ghs-settings-secret-value-77"
	secretRCToken   = "rct_0123456789abcdefghijklmnop"
	secretPEMMarker = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
)

var allSecrets = []string{testAPIKey, secretEnvValue, secretBearer, secretAWSKey, secretResolved, secretSettings, secretRCToken, secretPEMMarker}

var protocols = []string{llmtest.OpenAI, llmtest.Anthropic}

const validSubmission = `{"summary":"checkout pods are OOMKilled since the 10:00 deploy of v2.3",
 "root_cause":{"description":"checkout v2.3 needs more memory than its 256Mi limit","confidence":85,
   "evidence":["pod checkout-7d9 terminated OOMKilled (exit 137) at 10:02","deployment checkout rolled out v2.3 at 10:00"]},
 "timeline":[{"timestamp":"2026-03-14T10:00:00Z","event":"deploy checkout v2.3"},{"timestamp":"2026-03-14T10:02:00Z","event":"first OOMKill"}],
 "affected_systems":["checkout"],
 "recommendations":[{"priority":"high","action":"raise the memory limit of checkout to 512Mi"}],
 "ruled_out":[{"hypothesis":"node memory pressure","reason":"nodes report no MemoryPressure"}],
 "verdict":"identified"}`

const allSupported = `{"verdicts":[{"claim":0,"verdict":"supported","reason":"OOMKilled status"},{"claim":1,"verdict":"supported","reason":"in list_pods"},{"claim":2,"verdict":"supported","reason":"in changes"}]}`

func wantSubmission(t *testing.T) *finding.Result {
	t.Helper()
	var r finding.Result
	if err := json.Unmarshal([]byte(validSubmission), &r); err != nil {
		t.Fatal(err)
	}
	r.Normalize()
	return &r
}

// analystResult is what the fake analyst finds.
func analystResult() *finding.Result {
	r := &finding.Result{
		Summary:         "analyst: checkout restarts",
		RootCause:       finding.RootCause{Description: "analyst: checkout pods restart", Confidence: 50, Evidence: []string{"restart count 7"}},
		AffectedSystems: []string{"checkout"},
		Verdict:         finding.VerdictIdentified,
	}
	r.Normalize()
	return r
}

type fakeAnalyst struct {
	calls int
	mu    sync.Mutex
	err   error
}

func (a *fakeAnalyst) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	if a.err != nil {
		return nil, a.err
	}
	if run.Has("list_nodes") {
		if _, err := run.Call(ctx, "list_nodes", nil); err != nil {
			return nil, err
		}
	}
	r := analystResult()
	r.Summary += " (" + req.Agent.Name + ")"
	return r, nil
}

// fakeRun records calls, steps, subs and usage; sub-runs share the record.
type fakeRun struct {
	rec       *record
	toolkit   []string
	agent     string
	env       *tools.Env
	required  bool
	maxTokens int
}

type record struct {
	mu      sync.Mutex
	calls   []string // name + " " + args
	used    []string
	steps   []string
	subs    []string
	usage   []agent.Usage
	results map[string]func(args json.RawMessage) (any, error)
}

func newFakeRun(toolkit ...string) *fakeRun {
	return &fakeRun{
		rec:     &record{results: map[string]func(json.RawMessage) (any, error){}},
		toolkit: toolkit,
		env: &tools.Env{
			Sources:  &evidence.Sources{Now: func() time.Time { return time.Date(2026, 3, 14, 10, 42, 0, 0, time.UTC) }},
			Settings: map[string]map[string]any{"github": {"api_key": secretSettings}},
		},
	}
}

func (r *fakeRun) Call(ctx context.Context, name string, args any) (any, error) {
	if !r.Has(name) {
		return nil, fmt.Errorf("tool %q is not in this agent's toolkit", name)
	}
	raw, _ := json.Marshal(args)
	if rm, ok := args.(json.RawMessage); ok {
		raw = rm
	}
	r.rec.mu.Lock()
	r.rec.calls = append(r.rec.calls, name+" "+string(raw))
	if !slices.Contains(r.rec.used, name) {
		r.rec.used = append(r.rec.used, name)
	}
	f := r.rec.results[name]
	r.rec.mu.Unlock()
	if f == nil {
		return map[string]string{"status": "ok"}, nil
	}
	return f(raw)
}

func (r *fakeRun) Has(name string) bool { return slices.Contains(r.toolkit, name) }

func (r *fakeRun) Step(current string, completed, total int) {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	if completed > total {
		panic(fmt.Sprintf("step %q: completed %d > total %d", current, completed, total))
	}
	r.rec.steps = append(r.rec.steps, current)
}

func (r *fakeRun) Sub(a agent.Agent) agent.Run {
	r.rec.mu.Lock()
	r.rec.subs = append(r.rec.subs, a.Name)
	r.rec.mu.Unlock()
	return &fakeRun{rec: r.rec, toolkit: a.Tools, agent: a.Name, env: r.env}
}

func (r *fakeRun) Env() *tools.Env { return r.env }

func (r *fakeRun) RecordUsage(u agent.Usage) {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	r.rec.usage = append(r.rec.usage, u)
}

func (r *fakeRun) RequireLLM() bool { return r.required }

func (r *fakeRun) LLMMaxTokens() int { return r.maxTokens }

func (r *fakeRun) callsOf(name string) []string {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	var out []string
	for _, c := range r.rec.calls {
		if strings.HasPrefix(c, name+" ") {
			out = append(out, c)
		}
	}
	return out
}

// testCatalog describes the tools the tests offer.
func testCatalog() *tools.Catalog {
	spec := func(name, params string) tools.Tool {
		return tools.Tool{Spec: tools.Spec{Name: name, Description: "test tool " + name, Parameters: json.RawMessage(params), ReadOnly: true}}
	}
	return tools.NewCatalog([]tools.Tool{
		spec("list_pods", `{"type":"object","properties":{"namespace":{"type":"string"},"label_selector":{"type":"string"}},"required":["namespace"],"additionalProperties":false}`),
		spec("list_nodes", `{"type":"object","properties":{}}`),
		spec("get_pod_logs", `{"type":"object","properties":{"namespace":{"type":"string"},"pod":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["namespace","pod"]}`),
		spec("mcp:search", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
	})
}

// podsWithSecrets is a list_pods result that carries secrets in env values,
// log-like annotations and a private key.
func podsWithSecrets(json.RawMessage) (any, error) {
	return []map[string]any{{
		"metadata": map[string]any{"name": "checkout-7d9", "namespace": "shop",
			"annotations": map[string]string{
				"debug":   "curl -H 'Authorization: Bearer " + secretBearer + "' http://svc",
				"aws":     "key " + secretAWSKey + " used",
				"conn":    "dsn uses " + secretResolved,
				"token":   secretRCToken,
				"tls.key": "-----BEGIN PRIVATE KEY-----\n" + secretPEMMarker + "abc\n-----END PRIVATE KEY-----",
			}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app",
			"env": []any{map[string]any{"name": "DB_PASSWORD", "value": secretEnvValue}, map[string]any{"name": "MODE", "value": "prod"}}}}},
		"status": map[string]any{"containerStatuses": []any{map[string]any{"name": "app", "restartCount": 7,
			"lastState": map[string]any{"terminated": map[string]any{"reason": "OOMKilled", "exitCode": 137}}}}},
	}}, nil
}

type setup struct {
	proto    string
	srv      *llmtest.Server
	cfg      Config
	provider Provider
	run      *fakeRun
	analyst  *fakeAnalyst
	engine   *Engine
	req      *agent.Request
}

// newSetup starts a fake server of proto with replies and an engine on it.
func newSetup(t *testing.T, proto string, replies ...llmtest.Reply) *setup {
	t.Helper()
	s := &setup{proto: proto}
	s.srv = llmtest.New(t, proto, replies...)
	s.cfg = Config{Provider: proto, BaseURL: s.srv.URL, Model: "test-model", APIKey: testAPIKey,
		Timeout: 5 * time.Second, MaxSteps: 6}
	s.run = newFakeRun("list_pods", "list_nodes", "get_pod_logs", "mcp:search")
	s.run.rec.results["list_pods"] = podsWithSecrets
	s.analyst = &fakeAnalyst{}
	s.req = &agent.Request{ID: "inv-1", Team: "shop", Message: "checkout is returning 502s",
		Context: map[string]string{"service": "checkout", "namespace": "shop"},
		Agent:   agent.Agent{Name: tools.AgentK8s, Enabled: true, Prompt: "Focus on Kubernetes.", Tools: []string{"get_pod_logs", "list_nodes", "list_pods", "mcp:search"}}}
	s.build(t)
	return s
}

// build (re)creates the provider and engine from s.cfg.
func (s *setup) build(t *testing.T) {
	t.Helper()
	p, err := NewProvider(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	fastBackoff(p)
	s.provider = p
	var analyst agent.Engine
	if s.analyst != nil {
		analyst = s.analyst
	}
	s.engine = NewEngine(s.cfg, p, analyst, WithCatalog(testCatalog()), WithSecrets(secretResolved))
}

func fastBackoff(p Provider) {
	switch c := p.(type) {
	case *OpenAI:
		c.t.backoffBase = 5 * time.Millisecond
	case *Anthropic:
		c.t.backoffBase = 5 * time.Millisecond
	}
}

func (s *setup) investigate(t *testing.T) (*finding.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.engine.Investigate(ctx, s.req, s.run)
}

// assertNoSecrets checks every request body and header sent to the model
// server apart from the auth header itself.
func assertNoSecrets(t *testing.T, srv *llmtest.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		for _, sec := range allSecrets {
			if strings.Contains(string(r.Body), sec) {
				t.Errorf("request %d body contains secret %q", i, sec)
			}
		}
	}
}

func call(name, args string) llmtest.Call { return llmtest.Call{Name: name, Args: args} }

func hasNote(r *finding.Result, sub string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
