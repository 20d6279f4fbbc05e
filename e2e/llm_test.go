package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rootcause/rootcause/agent/llm/llmtest"
)

// The API key the server resolves from env:FAKE_KEY; it must never reach
// the model server in a request body.
const fakeKey = "sk-test-secret"

// llmEnv is the environment of a serve whose LLM is the fake at baseURL.
func llmEnv(baseURL string, extra ...string) []string {
	return append([]string{
		"ROOTCAUSE_LLM_PROVIDER=openai",
		"ROOTCAUSE_LLM_BASE_URL=" + baseURL,
		"ROOTCAUSE_LLM_MODEL=test-model",
		"ROOTCAUSE_LLM_API_KEY=env:FAKE_KEY",
		"FAKE_KEY=" + fakeKey,
	}, extra...)
}

const llmSubmission = `{"summary":"checkout pods are OOMKilled since the deploy",
 "root_cause":{"description":"the new checkout release needs more memory than its limit","confidence":85,
   "evidence":["checkout pods terminated OOMKilled","checkout was deployed just before"]},
 "timeline":[{"timestamp":"2026-03-14T10:00:00Z","event":"deploy checkout"}],
 "affected_systems":["checkout"],
 "recommendations":[{"priority":"high","action":"raise the memory limit of checkout"}],
 "verdict":"identified"}`

const llmReview = `{"verdicts":[{"claim":0,"verdict":"supported","reason":"OOMKilled in list_pods"},{"claim":1,"verdict":"supported","reason":"in list_pods"},{"claim":2,"verdict":"supported","reason":"in the changes"}]}`

// TestLLMInvestigation runs an investigation through the real binary with
// a scripted OpenAI-compatible model: it lists pods, submits, and the
// skeptic approves.
func TestLLMInvestigation(t *testing.T) {
	p := llmtest.OpenAI
	model := llmtest.NewOpenAI(t,
		llmtest.ToolCalls(p, "Let me look at the pods.", llmtest.Call{ID: "call_pods", Name: "list_pods", Args: `{}`}),
		llmtest.ToolCalls(p, "", llmtest.Call{ID: "call_submit", Name: "submit_findings", Args: llmSubmission}),
		llmtest.ToolCalls(p, "", llmtest.Call{ID: "call_review", Name: "review_findings", Args: llmReview}),
	)
	dir := t.TempDir()
	s := startServer(t, dir, llmEnv(model.URL)...)
	admin := issue(t, dir, "--admin")
	team := addTeam(t, s, admin, "payments", map[string]any{"evidence_bundle": bundlePath(t, "oom-after-deploy")}, false)

	r := call(t, http.MethodPost, s.url+"/api/v1/agents/run", team, map[string]any{
		"agent_name": "k8s_agent", "message": "why is checkout failing?", "context": map[string]string{"service": "checkout"}})
	if r.status != http.StatusOK {
		t.Fatalf("sync run: %d %s\n%s", r.status, r.raw, s.log.String())
	}
	res, _ := r.body["result"].(map[string]any)
	if res["summary"] != "checkout pods are OOMKilled since the deploy" || res["verdict"] != "identified" {
		t.Fatalf("result is not the model's submission: %s", r.raw)
	}
	rc, _ := res["root_cause"].(map[string]any)
	if rc["confidence"] != float64(85) {
		t.Errorf("confidence %v, want the submitted 85 (the skeptic supported every claim)", rc["confidence"])
	}
	var used []string
	for _, u := range r.body["tools_used"].([]any) {
		used = append(used, u.(string))
	}
	if !slices.Contains(used, "list_pods") {
		t.Errorf("tools_used %v lacks list_pods", used)
	}
	if model.Remaining() != 0 {
		t.Errorf("%d scripted replies unused", model.Remaining())
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (turn, submit, skeptic)", len(reqs))
	}
	if reqs[2].ForcedTool() != "review_findings" {
		t.Errorf("third request forces %q, want the skeptic's review_findings", reqs[2].ForcedTool())
	}
	if trs := reqs[1].ToolResults(); len(trs) != 1 || trs[0].ID != "call_pods" || !strings.Contains(trs[0].Content, "OOMKilled") {
		t.Errorf("list_pods result sent back = %+v", trs)
	}

	st := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+r.body["investigation_id"].(string), team, nil)
	u, _ := st.body["usage"].(map[string]any)
	if u["model"] != "test-model" || u["input_tokens"] != float64(3*llmtest.InputTokens) || u["output_tokens"] != float64(3*llmtest.OutputTokens) ||
		u["tool_calls"] != float64(1) {
		t.Errorf("status usage = %v", st.body["usage"])
	}

	// No secret in anything sent to the model.
	adminSecret := admin
	teamSecret := strings.TrimPrefix(team, "Bearer ")
	for i, q := range reqs {
		if q.Header.Get("Authorization") != "Bearer "+fakeKey {
			t.Errorf("request %d: Authorization header %q, want the resolved key", i, q.Header.Get("Authorization"))
		}
		for _, secret := range []string{fakeKey, teamSecret, adminSecret} {
			if strings.Contains(string(q.Body), secret) {
				t.Errorf("request %d body contains a secret %q", i, secret[:6])
			}
		}
	}
	if strings.Contains(s.log.String(), fakeKey) {
		t.Error("the server log contains the API key")
	}
}

// failingModel answers every request with a 500 in the OpenAI error shape.
type failingModel struct {
	mu     sync.Mutex
	bodies []string
	srv    *httptest.Server
}

func newFailingModel(t *testing.T) *failingModel {
	f := &failingModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, llmtest.ErrorBody(llmtest.OpenAI, "api_error", "the model is down"))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *failingModel) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

// TestLLMUnavailable: a model server that always fails makes the
// investigation fall back to the analyst's result with a note, or fail with
// llm_unavailable when the team requires the LLM.
func TestLLMUnavailable(t *testing.T) {
	model := newFailingModel(t)
	dir := t.TempDir()
	s := startServer(t, dir, llmEnv(model.srv.URL+"/v1", "ROOTCAUSE_LLM_MAX_RETRIES=1")...)
	admin := issue(t, dir, "--admin")
	bundle := bundlePath(t, "oom-after-deploy")
	lenient := addTeam(t, s, admin, "payments", map[string]any{"evidence_bundle": bundle}, false)
	strict := addTeam(t, s, admin, "billing", map[string]any{"evidence_bundle": bundle,
		"feature_flags": map[string]any{"require_llm": true}}, false)
	run := s.url + "/api/v1/agents/run"
	body := map[string]any{"agent_name": "k8s_agent", "message": "why is checkout failing?"}

	r := call(t, http.MethodPost, run, lenient, body)
	if r.status != http.StatusOK {
		t.Fatalf("fallback run: %d %s\n%s", r.status, r.raw, s.log.String())
	}
	res, _ := r.body["result"].(map[string]any)
	var notes []string
	for _, n := range res["notes"].([]any) {
		notes = append(notes, n.(string))
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "LLM provider unavailable") && strings.Contains(n, "offline analyst")
	}) {
		t.Errorf("fallback result notes %q do not say the LLM was unavailable", notes)
	}
	if rc, _ := res["root_cause"].(map[string]any); rc["description"] == "" || res["summary"] == "" {
		t.Errorf("fallback result is empty: %s", r.raw)
	}
	if n := len(model.requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (one attempt, one retry)", n)
	}

	r = call(t, http.MethodPost, run, strict, body)
	if r.status != http.StatusBadGateway || r.errorCode() != "llm_unavailable" {
		t.Fatalf("required LLM: %d %s", r.status, r.raw)
	}
	e := r.body["error"].(map[string]any)
	st := call(t, http.MethodGet, s.url+"/api/v1/agents/status/"+e["investigation_id"].(string), strict, nil)
	if st.body["status"] != "failed" {
		t.Errorf("status %v", st.body["status"])
	}
	if se, _ := st.body["error"].(map[string]any); se["code"] != "llm_unavailable" {
		t.Errorf("status error %v", st.body["error"])
	}
	for i, b := range model.requests() {
		if strings.Contains(b, fakeKey) || strings.Contains(b, strings.TrimPrefix(strict, "Bearer ")) {
			t.Errorf("request %d body contains a secret", i)
		}
	}
}
