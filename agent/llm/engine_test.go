package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/llm/llmtest"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

func TestCorrectInvestigation(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "Let me look at the pods.", llmtest.Call{ID: "call_pods_1", Name: "list_pods", Args: `{"namespace":"shop"}`}),
				llmtest.ToolCalls(proto, "", llmtest.Call{ID: "call_submit_1", Name: "submit_findings", Args: validSubmission}),
				llmtest.ToolCalls(proto, "", llmtest.Call{ID: "call_review_1", Name: "review_findings", Args: allSupported}),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantSubmission(t); !reflect.DeepEqual(res, want) {
				t.Errorf("result = %+v\nwant %+v", res, want)
			}
			if got := s.run.rec.used; !reflect.DeepEqual(got, []string{"list_nodes", "list_pods"}) {
				t.Errorf("tools used = %v, want the analyst's list_nodes and the model's list_pods", got)
			}
			if got := s.run.callsOf("list_pods"); len(got) != 1 || got[0] != `list_pods {"namespace":"shop"}` {
				t.Errorf("list_pods calls = %v", got)
			}
			reqs := s.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if r.MaxTokens() != DefaultMaxTokens {
					t.Errorf("request %d max_tokens = %d, want %d", i, r.MaxTokens(), DefaultMaxTokens)
				}
				if r.JSON["model"] != "test-model" {
					t.Errorf("request %d model = %v", i, r.JSON["model"])
				}
				switch proto {
				case llmtest.OpenAI:
					if got := r.Header.Get("Authorization"); got != "Bearer "+testAPIKey {
						t.Errorf("Authorization = %q", got)
					}
				case llmtest.Anthropic:
					if r.Header.Get("x-api-key") != testAPIKey || r.Header.Get("anthropic-version") != "2023-06-01" {
						t.Errorf("headers = %v", r.Header)
					}
				}
			}
			// Turn 1: the toolkit with LLM-safe names, plus submit_findings.
			names := reqs[0].ToolNames()
			for _, want := range []string{"submit_findings", "list_pods", "list_nodes", "get_pod_logs", "mcp__search"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools offered %v lack %s", names, want)
				}
			}
			if reqs[0].ForcedTool() != "" {
				t.Errorf("turn 1 forces %q", reqs[0].ForcedTool())
			}
			first := string(reqs[0].Body)
			for _, want := range []string{"checkout is returning 502s", "namespace: shop", "analyst: checkout pods restart", "Focus on Kubernetes.", "2026-03-14T10:42:00Z"} {
				if !strings.Contains(first, want) {
					t.Errorf("first request lacks %q", want)
				}
			}
			// Turn 2: the tool result, under the model's call id.
			trs := reqs[1].ToolResults()
			if len(trs) != 1 || trs[0].ID != "call_pods_1" || !strings.Contains(trs[0].Content, "checkout-7d9") || !strings.Contains(trs[0].Content, "OOMKilled") {
				t.Fatalf("tool results of turn 2 = %+v", trs)
			}
			if ids := reqs[1].ToolCallIDs(); !reflect.DeepEqual(ids, []string{"call_pods_1"}) {
				t.Errorf("assistant tool call ids = %v", ids)
			}
			wantRoles := map[string][]string{
				llmtest.OpenAI:    {"system", "user", "assistant", "tool"},
				llmtest.Anthropic: {"user", "assistant", "user"},
			}[proto]
			if got := reqs[1].Roles(); !reflect.DeepEqual(got, wantRoles) {
				t.Errorf("roles = %v, want %v", got, wantRoles)
			}
			if proto == llmtest.Anthropic && !strings.Contains(reqs[1].JSON["system"].(string), "rootcause") {
				t.Error("anthropic system prompt missing")
			}
			// Turn 3: the skeptic, forced to review_findings, without tools to gather.
			if reqs[2].ForcedTool() != "review_findings" || !reflect.DeepEqual(reqs[2].ToolNames(), []string{"review_findings"}) {
				t.Errorf("skeptic request tools %v forced %q", reqs[2].ToolNames(), reqs[2].ForcedTool())
			}
			if !strings.Contains(string(reqs[2].Body), "checkout-7d9") {
				t.Error("skeptic was not given the evidence collected")
			}
			assertNoSecrets(t, s.srv)
			if strings.Contains(string(reqs[1].Body), "[REDACTED]") == false {
				t.Error("tool result was not redacted")
			}
			// Accounting.
			if len(s.run.rec.usage) != 1 {
				t.Fatalf("usage recorded %d times", len(s.run.rec.usage))
			}
			u := s.run.rec.usage[0]
			if u.Model != "test-model" || u.InputTokens != 3*llmtest.InputTokens || u.OutputTokens != 3*llmtest.OutputTokens ||
				u.Steps != 2 || u.ToolCalls != 1 || u.DurationSeconds <= 0 {
				t.Errorf("usage = %+v", u)
			}
			if len(s.run.rec.steps) == 0 {
				t.Error("no progress reported")
			}
		})
	}
}

func TestKeylessOpenAIAndOverrides(t *testing.T) {
	s := newSetup(t, llmtest.OpenAI,
		llmtest.ToolCalls(llmtest.OpenAI, "", call("submit_findings", validSubmission)),
		llmtest.ToolCalls(llmtest.OpenAI, "", call("review_findings", allSupported)),
	)
	s.cfg.APIKey = ""
	s.build(t)
	temp := 0.1
	s.req.Agent.Model, s.req.Agent.Temperature = "qwen2.5:14b", &temp
	s.run.maxTokens = 8192
	if _, err := s.investigate(t); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.srv.Requests() {
		if _, ok := r.Header["Authorization"]; ok {
			t.Error("Authorization sent to a keyless server")
		}
		if r.JSON["model"] != "qwen2.5:14b" || r.JSON["temperature"] != 0.1 || r.MaxTokens() != 8192 {
			t.Errorf("model %v temperature %v: the agent's overrides were not used", r.JSON["model"], r.JSON["temperature"])
		}
	}
	if got := s.run.rec.usage[0].Model; got != "qwen2.5:14b" {
		t.Errorf("usage model = %q", got)
	}
}

func TestProseGetsOneNudge(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.Text(proto, "I would run kubectl get pods -n shop to check the pods."),
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary != wantSubmission(t).Summary {
				t.Errorf("result %+v", res)
			}
			body := string(s.srv.Requests()[1].Body)
			if !strings.Contains(body, "kubectl get pods") || !strings.Contains(body, "without calling a tool") {
				t.Errorf("second turn lacks the prose answer and the nudge: %s", body)
			}
		})
	}
}

func TestProseForeverEndsWithAnalystResult(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.Text(proto, "The pods look bad."),
				llmtest.Text(proto, "Really, they look bad."),
				llmtest.Text(proto, "I am sure they look bad."),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary != analystResult().Summary+" (k8s_agent)" || !hasNote(res, "did not submit findings") {
				t.Errorf("result %+v, want the analyst's with a note", res)
			}
			reqs := s.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			if reqs[2].ForcedTool() != "submit_findings" || !reflect.DeepEqual(reqs[2].ToolNames(), []string{"submit_findings"}) {
				t.Errorf("third turn should force submit_findings: tools %v forced %q", reqs[2].ToolNames(), reqs[2].ForcedTool())
			}
		})
	}
}

func TestInventedToolAndBadArguments(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "",
					llmtest.Call{ID: "c1", Name: "kubectl_exec", Args: `{"cmd":"get pods"}`},
					llmtest.Call{ID: "c2", Name: "list_pods", Args: `{"namespace":5}`},
					llmtest.Call{ID: "c3", Name: "list_pods", Args: `{"namespace":"shop","color":"red"}`},
				),
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
			)
			if _, err := s.investigate(t); err != nil {
				t.Fatal(err)
			}
			if got := s.run.callsOf("list_pods"); len(got) != 0 {
				t.Errorf("invalid calls reached the tool: %v", got)
			}
			trs := s.srv.Requests()[1].ToolResults()
			if len(trs) != 3 {
				t.Fatalf("tool results %+v", trs)
			}
			if trs[0].ID != "c1" || !strings.Contains(trs[0].Content, `Unknown tool "kubectl_exec"`) || !strings.Contains(trs[0].Content, "list_pods") {
				t.Errorf("unknown tool result: %+v", trs[0])
			}
			if trs[1].ID != "c2" || !strings.Contains(trs[1].Content, "Invalid arguments for list_pods") || !strings.Contains(trs[1].Content, "/namespace") {
				t.Errorf("bad argument result: %+v", trs[1])
			}
			if !strings.Contains(trs[2].Content, "color") {
				t.Errorf("extra property result: %+v", trs[2])
			}
			if proto == llmtest.Anthropic && !(trs[0].IsError && trs[1].IsError) {
				t.Error("errors not flagged is_error")
			}
		})
	}
}

func TestRepeatedCallRefusedAndStepCap(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "", call("list_pods", `{"namespace":"shop","label_selector":"app=checkout"}`)),
				llmtest.ToolCalls(proto, "", call("list_pods", `{ "label_selector" : "app=checkout", "namespace" : "shop" }`)),
				llmtest.ToolCalls(proto, "", call("get_pod_logs", `{"namespace":"shop","pod":"checkout-7d9"}`)),
			)
			s.cfg.MaxSteps = 3
			s.build(t)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.run.callsOf("list_pods"); len(got) != 1 {
				t.Errorf("list_pods ran %d times, want 1 (the repeat refused)", len(got))
			}
			reqs := s.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			trs := reqs[2].ToolResults()
			if len(trs) != 2 || !strings.Contains(trs[1].Content, "already called list_pods with these exact arguments") {
				t.Errorf("repeat not refused: %+v", trs)
			}
			if reqs[2].ForcedTool() != "submit_findings" {
				t.Errorf("last step does not force submit_findings")
			}
			if got := s.run.callsOf("get_pod_logs"); len(got) != 0 {
				t.Errorf("a tool ran on the forced last step: %v", got)
			}
			if !hasNote(res, "the model did not submit findings within 3 steps") || !strings.HasPrefix(res.Summary, "analyst:") {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestMalformedArgumentsJSON(t *testing.T) {
	// Only OpenAI carries arguments as text that can be malformed.
	p := llmtest.OpenAI
	s := newSetup(t, p,
		llmtest.ToolCalls(p, "", llmtest.Call{ID: "bad1", Name: "list_pods", Args: `{namespace: shop`}),
		llmtest.ToolCalls(p, "", llmtest.Call{ID: "bad2", Name: "submit_findings", Args: `{"summary": "x", `}),
		llmtest.ToolCalls(p, "", call("submit_findings", validSubmission)),
		llmtest.ToolCalls(p, "", call("review_findings", allSupported)),
	)
	res, err := s.investigate(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != wantSubmission(t).Summary {
		t.Errorf("result %+v", res)
	}
	reqs := s.srv.Requests()
	if trs := reqs[1].ToolResults(); len(trs) != 1 || !strings.Contains(trs[0].Content, "not valid JSON") {
		t.Errorf("malformed arguments result: %+v", trs)
	}
	// The malformed arguments are echoed back as the model wrote them.
	if !strings.Contains(string(reqs[1].Body), `{namespace: shop`) {
		t.Error("assistant tool call not echoed")
	}
	if reqs[2].ForcedTool() != "submit_findings" {
		t.Error("the repair turn does not force submit_findings")
	}
}

func TestInvalidSubmissionRepair(t *testing.T) {
	bad := strings.Replace(validSubmission, `"confidence":85`, `"confidence":150`, 1)
	badTime := strings.Replace(validSubmission, `2026-03-14T10:00:00Z`, `yesterday at ten`, 1)
	for _, proto := range protocols {
		t.Run(proto+"/repaired", func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "", call("submit_findings", bad)),
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, wantSubmission(t)) {
				t.Errorf("result %+v", res)
			}
			trs := s.srv.Requests()[1].ToolResults()
			if len(trs) != 1 || !strings.Contains(trs[0].Content, "confidence") || !strings.Contains(trs[0].Content, "rejected") {
				t.Errorf("repair message %+v", trs)
			}
		})
		t.Run(proto+"/still-invalid", func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "", call("submit_findings", bad)),
				llmtest.ToolCalls(proto, "", call("submit_findings", badTime)),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Summary, "analyst:") || !hasNote(res, "still invalid after a repair turn") || !hasNote(res, "timeline[0].timestamp") {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestRepairOnLastStepGetsOneExtraTurn(t *testing.T) {
	p := llmtest.Anthropic
	bad := strings.Replace(validSubmission, `"priority":"high"`, `"priority":"urgent"`, 1)
	s := newSetup(t, p,
		llmtest.ToolCalls(p, "", call("list_pods", `{"namespace":"shop"}`)),
		llmtest.ToolCalls(p, "", call("submit_findings", bad)),
		llmtest.ToolCalls(p, "", call("submit_findings", validSubmission)),
		llmtest.ToolCalls(p, "", call("review_findings", allSupported)),
	)
	s.cfg.MaxSteps = 2
	s.build(t)
	res, err := s.investigate(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != wantSubmission(t).Summary {
		t.Errorf("result %+v", res)
	}
}

func TestMalformedHTTPBody(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto, llmtest.Reply{Body: `{"choices": [ {"message": `})
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if !hasNote(res, "LLM provider unavailable") || !hasNote(res, "bad_response") || !hasNote(res, "result from the offline analyst") {
				t.Errorf("notes %v", res.Notes)
			}
			if len(s.srv.Requests()) != 1 {
				t.Errorf("a malformed body was retried")
			}
		})
	}
}

func TestPersistent500(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto+"/fallback", func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.Error(proto, 500, "overloaded", nil),
				llmtest.Error(proto, 502, "bad gateway", nil),
				llmtest.Error(proto, 503, "unavailable", nil),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Summary, "analyst:") || !hasNote(res, "LLM provider unavailable") || !hasNote(res, "server_error") {
				t.Errorf("result %+v", res)
			}
			if n := len(s.srv.Requests()); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
		})
		t.Run(proto+"/required", func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.Error(proto, 500, "overloaded "+testAPIKey, nil),
			)
			s.cfg.Required, s.cfg.MaxRetries = true, -1
			s.build(t)
			_, err := s.investigate(t)
			var ue *UnavailableError
			if !errors.As(err, &ue) || ue.Code != CodeLLMUnavailable {
				t.Fatalf("err = %v, want llm_unavailable", err)
			}
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Status != 500 || pe.Code != CodeServerError {
				t.Errorf("provider error = %+v", pe)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Error("error message contains the API key")
			}
		})
		t.Run(proto+"/required-by-team", func(t *testing.T) {
			s := newSetup(t, proto, llmtest.Error(proto, 401, "invalid x-api-key", nil))
			s.run.required = true
			_, err := s.investigate(t)
			var pe *ProviderError
			if !IsUnavailable(err) || !errors.As(err, &pe) || pe.Code != CodeAuth {
				t.Fatalf("err = %v", err)
			}
			if len(s.srv.Requests()) != 1 {
				t.Error("401 was retried")
			}
		})
	}
}

func TestRetriedThenSuccess(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.Error(proto, 429, "slow down", map[string]string{"Retry-After": "1"}),
				llmtest.Error(proto, 500, "oops", nil),
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
			)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, wantSubmission(t)) {
				t.Errorf("result %+v", res)
			}
			reqs := s.srv.Requests()
			if gap := reqs[1].At.Sub(reqs[0].At); gap < 950*time.Millisecond {
				t.Errorf("Retry-After: 1 not honoured: retried after %v", gap)
			}
			if string(reqs[0].Body) != string(reqs[2].Body) {
				t.Error("the retried request differs from the first")
			}
		})
	}
}

func TestSlowModelCancellation(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			s := newSetup(t, proto, llmtest.Reply{Hang: true})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				time.Sleep(200 * time.Millisecond)
				cancel()
			}()
			start := time.Now()
			res, err := s.engine.Investigate(ctx, s.req, s.run)
			if !errors.Is(err, context.Canceled) || res != nil {
				t.Fatalf("res %v err %v, want context.Canceled", res, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("returned after %v", d)
			}
			select {
			case <-s.srv.AbortedC():
			case <-time.After(3 * time.Second):
				t.Fatal("the server never saw the request aborted")
			}
		})
	}
}

func TestPerCallTimeoutNotRetried(t *testing.T) {
	s := newSetup(t, llmtest.OpenAI, llmtest.Reply{Delay: 3 * time.Second, Body: "{}"})
	s.cfg.Timeout = 150 * time.Millisecond
	s.build(t)
	res, err := s.investigate(t)
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(res, "no response within 150ms") || !hasNote(res, "unreachable") {
		t.Errorf("notes %v", res.Notes)
	}
	if n := len(s.srv.Requests()); n != 1 {
		t.Errorf("%d attempts", n)
	}
}

func TestSkeptic(t *testing.T) {
	cases := []struct {
		name, review   string
		wantConfidence float64
		wantEvidence   int
		wantVerdict    string
		wantNotes      []string
	}{
		{"correlation", `{"verdicts":[{"claim":0,"verdict":"correlation_only","reason":"deploy and OOM only coincide"},{"claim":1,"verdict":"supported","reason":"seen"},{"claim":2,"verdict":"unsupported","reason":"no rollout seen"}]}`,
			51, 1, "identified", []string{"correlation only", "lowered from 85 to 51", "removed evidence"}},
		{"unsupported", `{"verdicts":[{"claim":0,"verdict":"unsupported","reason":"no OOM in evidence"}]}`,
			40, 2, "inconclusive", []string{"does not support the root cause", "capped at 40"}},
		{"malformed", `{"verdicts":[{"claim":0,"verdict":"probably"}]}`,
			85, 2, "identified", []string{"skeptic review was malformed"}},
	}
	for _, proto := range protocols {
		for _, c := range cases {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				s := newSetup(t, proto,
					llmtest.ToolCalls(proto, "", call("list_pods", `{"namespace":"shop"}`)),
					llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
					llmtest.ToolCalls(proto, "", call("review_findings", c.review)),
				)
				res, err := s.investigate(t)
				if err != nil {
					t.Fatal(err)
				}
				if res.RootCause.Confidence != c.wantConfidence || len(res.RootCause.Evidence) != c.wantEvidence || res.Verdict != c.wantVerdict {
					t.Errorf("confidence %v evidence %v verdict %q", res.RootCause.Confidence, res.RootCause.Evidence, res.Verdict)
				}
				for _, n := range c.wantNotes {
					if !hasNote(res, n) {
						t.Errorf("notes %v lack %q", res.Notes, n)
					}
				}
				if err := res.Validate(); err != nil {
					t.Error(err)
				}
			})
		}
		t.Run(proto+"/fails", func(t *testing.T) {
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.Error(proto, 503, "down", nil),
			)
			s.cfg.MaxRetries = -1
			s.build(t)
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if res.RootCause.Confidence != 85 || !hasNote(res, "skeptic review failed") {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestPlannerDelegates(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			sub := strings.Replace(validSubmission, "checkout pods are OOMKilled", "SUB: checkout pods are OOMKilled", 1)
			s := newSetup(t, proto,
				llmtest.ToolCalls(proto, "", call("delegate_k8s_agent", `{"task":"check the checkout pods in shop"}`)),
				// the k8s_agent's own loop
				llmtest.ToolCalls(proto, "", call("list_pods", `{"namespace":"shop"}`)),
				llmtest.ToolCalls(proto, "", call("submit_findings", sub)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
				// back in the planner
				llmtest.ToolCalls(proto, "", call("submit_findings", validSubmission)),
				llmtest.ToolCalls(proto, "", call("review_findings", allSupported)),
			)
			k8s := agent.Agent{Name: tools.AgentK8s, Enabled: true, Tools: []string{"list_pods"}}
			s.req.Agent = agent.Agent{Name: tools.AgentPlanner, Enabled: true}
			s.req.Agents = map[string]agent.Agent{
				tools.AgentPlanner: s.req.Agent,
				tools.AgentK8s:     k8s,
				"disabled_agent":   {Name: "disabled_agent", Enabled: false},
			}
			s.run.toolkit = nil
			res, err := s.investigate(t)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary != wantSubmission(t).Summary {
				t.Errorf("result %+v", res)
			}
			if !reflect.DeepEqual(s.run.rec.subs, []string{tools.AgentK8s}) {
				t.Errorf("subs = %v", s.run.rec.subs)
			}
			if len(s.run.callsOf("list_pods")) != 1 {
				t.Errorf("the sub-agent's tool call did not run")
			}
			reqs := s.srv.Requests()
			if names := reqs[0].ToolNames(); !reflect.DeepEqual(names, []string{"submit_findings", "delegate_k8s_agent"}) {
				t.Errorf("planner tools = %v", names)
			}
			if names := reqs[1].ToolNames(); slices.Contains(names, "delegate_k8s_agent") || !slices.Contains(names, "list_pods") {
				t.Errorf("sub-agent tools = %v", names)
			}
			trs := reqs[4].ToolResults()
			if len(trs) != 1 || !strings.Contains(trs[0].Content, "SUB: checkout pods") {
				t.Errorf("delegation result %+v", trs)
			}
			u := s.run.rec.usage
			if len(u) != 1 || u[0].Steps != 4 || u[0].ToolCalls != 2 || u[0].InputTokens != 6*llmtest.InputTokens {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

func TestAliasesAndSalvage(t *testing.T) {
	p := llmtest.OpenAI
	s := newSetup(t, p,
		llmtest.ToolCalls(p, "", call("mcp__search", `{"q":"checkout oom"}`)),
		// A local model that writes its call into the text.
		llmtest.Text(p, `<tool_call>{"name": "get_pod_logs", "arguments": {"namespace": "shop", "pod": "checkout-7d9"}}</tool_call>`),
		llmtest.ToolCalls(p, "", call("submit_findings", validSubmission)),
		llmtest.ToolCalls(p, "", call("review_findings", allSupported)),
	)
	if _, err := s.investigate(t); err != nil {
		t.Fatal(err)
	}
	if got := s.run.callsOf("mcp:search"); len(got) != 1 {
		t.Errorf("mcp__search did not map back to mcp:search: %v", s.run.rec.calls)
	}
	if got := s.run.callsOf("get_pod_logs"); len(got) != 1 {
		t.Errorf("salvaged call did not run: %v", s.run.rec.calls)
	}
	if trs := s.srv.Requests()[2].ToolResults(); len(trs) != 2 {
		t.Errorf("tool results %+v", trs)
	}
}

func TestToolsetAliasCollisions(t *testing.T) {
	ts := &toolset{}
	long := strings.Repeat("x", 70)
	for _, n := range []string{"submit_findings", "a:b", "a__b", "a.b", long + ":t", long + ":u"} {
		ts.add(&offered{name: n})
	}
	want := []string{"submit_findings", "a__b", "a__b_2", "a_b", strings.Repeat("x", 64), strings.Repeat("x", 62) + "_2"}
	if !reflect.DeepEqual(ts.order, want) {
		t.Errorf("aliases = %v", ts.order)
	}
	if ts.byAlias["a__b"].name != "a:b" || ts.byAlias["a__b_2"].name != "a__b" {
		t.Error("aliases do not map back")
	}
}

func TestToolResultBudget(t *testing.T) {
	p := llmtest.Anthropic
	s := newSetup(t, p,
		llmtest.ToolCalls(p, "", call("list_nodes", `{}`)),
		llmtest.ToolCalls(p, "", call("get_pod_logs", `{"namespace":"shop","pod":"p"}`)),
		llmtest.ToolCalls(p, "", call("submit_findings", validSubmission)),
		llmtest.ToolCalls(p, "", call("review_findings", allSupported)),
	)
	s.cfg.ToolResultBudget = 2048
	s.build(t)
	items := make([]map[string]string, 500)
	for i := range items {
		items[i] = map[string]string{"name": "node-" + strings.Repeat("n", 20)}
	}
	s.run.rec.results["list_nodes"] = func(json.RawMessage) (any, error) { return items, nil }
	s.run.rec.results["get_pod_logs"] = func(json.RawMessage) (any, error) {
		return map[string]string{"text": strings.Repeat("log line ", 2000)}, nil
	}
	s.analyst = nil
	s.build(t)
	if _, err := s.investigate(t); err != nil {
		t.Fatal(err)
	}
	reqs := s.srv.Requests()
	tr := reqs[1].ToolResults()[0].Content
	if len(tr) > 2048+200 || !strings.Contains(tr, "of 500 items") || !strings.Contains(tr, "Narrow your query") {
		t.Errorf("array result not cut to budget (%d bytes): %.300s", len(tr), tr)
	}
	var head []any
	if err := json.Unmarshal([]byte(strings.SplitN(tr, "\n", 2)[0]), &head); err != nil || len(head) == 0 {
		t.Errorf("kept items are not valid JSON: %v", err)
	}
	tr = reqs[2].ToolResults()[1].Content
	if len(tr) > 2048+200 || !strings.Contains(tr, "truncated") {
		t.Errorf("object result not cut (%d bytes)", len(tr))
	}
}

func TestNoProvider(t *testing.T) {
	a := &fakeAnalyst{}
	run := newFakeRun("list_nodes")
	req := &agent.Request{Agent: agent.Agent{Name: tools.AgentK8s}}
	res, err := NewEngine(Config{}, nil, a).Investigate(context.Background(), req, run)
	if err != nil || !strings.HasPrefix(res.Summary, "analyst:") || len(res.Notes) != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if len(run.rec.usage) != 0 {
		t.Error("usage recorded without a model")
	}
	_, err = NewEngine(Config{Required: true}, nil, a).Investigate(context.Background(), req, run)
	if !IsUnavailable(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestNoAnalystFallbackIsInconclusive(t *testing.T) {
	p := llmtest.OpenAI
	s := newSetup(t, p, llmtest.Error(p, 400, "model not found", nil))
	s.analyst = nil
	s.build(t)
	res, err := s.investigate(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != finding.VerdictInconclusive || res.Validate() != nil || !hasNote(res, "bad_request") {
		t.Errorf("result %+v", res)
	}
	if len(s.srv.Requests()) != 1 {
		t.Error("400 retried")
	}
	if strings.Contains(string(s.srv.Requests()[0].Body), "Starting evidence") {
		t.Error("claims starting evidence without an analyst")
	}
}

func TestSubmissionBesideOtherCalls(t *testing.T) {
	p := llmtest.Anthropic
	s := newSetup(t, p,
		llmtest.ToolCalls(p, "", call("get_pod_logs", `{"namespace":"shop","pod":"x"}`), call("submit_findings", validSubmission)),
		llmtest.ToolCalls(p, "", call("review_findings", allSupported)),
	)
	s.analyst.err = errors.New("bundle unreadable")
	res, err := s.investigate(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.run.callsOf("get_pod_logs")) != 0 {
		t.Error("a call beside a valid submission ran")
	}
	if res.Summary != wantSubmission(t).Summary || !hasNote(res, "the offline analyst could not run (bundle unreadable)") {
		t.Errorf("result %+v", res)
	}
}

func TestAnalystAndModelBothFail(t *testing.T) {
	p := llmtest.OpenAI
	s := newSetup(t, p, llmtest.Error(p, 401, "no", nil))
	s.analyst.err = errors.New("bundle unreadable")
	_, err := s.investigate(t)
	if err == nil || !strings.Contains(err.Error(), "bundle unreadable") || !strings.Contains(err.Error(), "auth") {
		t.Fatalf("err = %v", err)
	}
}
