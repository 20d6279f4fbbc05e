package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.Server, mod func(*Config)) Provider {
	t.Helper()
	cfg := Config{Provider: srv.Protocol, BaseURL: srv.URL, Model: "m", APIKey: testAPIKey, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fastBackoff(p)
	return p
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-1":                            0,
		"Sat, 14 Mar 2026 10:00:07 GMT": 7 * time.Second,
		"Sat, 14 Mar 2026 09:00:00 GMT": 0,
		"soon":                          0,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	date := time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
	srv := llmtest.NewAnthropic(t,
		llmtest.Error(llmtest.Anthropic, 529, "overloaded", map[string]string{"Retry-After": date}),
		llmtest.Text(llmtest.Anthropic, "hello"),
	)
	resp, err := newClient(t, srv, nil).Chat(context.Background(), ChatRequest{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	if err != nil || resp.Content != "hello" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	reqs := srv.Requests()
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %v despite Retry-After %s", gap, date)
	}
}

func TestErrorsAreTypedAndScrubbed(t *testing.T) {
	cases := []struct {
		status   int
		code     string
		attempts int
	}{
		{400, CodeBadRequest, 1},
		{401, CodeAuth, 1},
		{403, CodeAuth, 1},
		{404, CodeBadRequest, 1},
		{429, CodeRateLimited, 3},
		{500, CodeServerError, 3},
	}
	for _, proto := range protocols {
		for _, c := range cases {
			replies := make([]llmtest.Reply, c.attempts)
			for i := range replies {
				replies[i] = llmtest.Error(proto, c.status, "bad key "+testAPIKey, nil)
			}
			srv := llmtest.New(t, proto, replies...)
			_, err := newClient(t, srv, nil).Chat(context.Background(), ChatRequest{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Status != c.status || pe.Code != c.code {
				t.Errorf("%s %d: err %v", proto, c.status, err)
				continue
			}
			if strings.Contains(err.Error(), testAPIKey) || !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("%s %d: error %q not scrubbed", proto, c.status, err)
			}
			if n := len(srv.Requests()); n != c.attempts {
				t.Errorf("%s %d: %d attempts, want %d", proto, c.status, n, c.attempts)
			}
		}
	}
}

func TestUnreachable(t *testing.T) {
	srv := llmtest.NewOpenAI(t) // never reached: the client points at a closed port
	p := newClient(t, srv, func(c *Config) { c.BaseURL = "http://127.0.0.1:1/v1"; c.MaxRetries = 1 })
	_, err := p.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != CodeUnreachable || pe.Status != 0 {
		t.Fatalf("err %v", err)
	}
}

func TestOpenAIWireDetails(t *testing.T) {
	// Ollama-style arguments given as an object, a missing id, null content.
	body := `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
	  {"function":{"name":"list_pods","arguments":{"namespace":"shop"}}},
	  {"id":"x","function":{"name":"list_nodes","arguments":""}}]},"finish_reason":"tool_calls"}]}`
	srv := llmtest.NewOpenAI(t, llmtest.Reply{Body: body})
	p := newClient(t, srv, nil)
	temp := 0.0
	resp, err := p.Chat(context.Background(), ChatRequest{
		System: "sys",
		Messages: []Message{
			{Role: RoleUser, Content: "hi"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "t", Arguments: json.RawMessage(`{"x":1}`)}}},
			{Role: RoleTool, ToolCallID: "a", ToolName: "t", Content: "out"},
		},
		Tools:       []ToolDef{{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice:  "t",
		Temperature: &temp,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || string(resp.ToolCalls[0].Arguments) != `{"namespace":"shop"}` || resp.ToolCalls[0].ID == "" ||
		len(resp.ToolCalls[1].Arguments) != 0 || resp.StopReason != "tool_calls" || resp.Usage != (Usage{}) {
		t.Errorf("resp %+v", resp)
	}
	r := srv.Requests()[0]
	var got struct {
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Type     string         `json:"type"`
			Function map[string]any `json:"function"`
		} `json:"tools"`
		ToolChoice  map[string]any `json:"tool_choice"`
		Temperature *float64       `json:"temperature"`
		MaxTokens   int            `json:"max_tokens"`
		Stream      *bool          `json:"stream"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 4 || got.Messages[0]["role"] != "system" || got.Messages[2]["content"] != nil ||
		got.Messages[3]["tool_call_id"] != "a" || got.Messages[3]["role"] != "tool" {
		t.Errorf("messages %v", got.Messages)
	}
	tc := got.Messages[2]["tool_calls"].([]any)[0].(map[string]any)
	if fn := tc["function"].(map[string]any); fn["arguments"] != `{"x":1}` || tc["type"] != "function" {
		t.Errorf("tool call %v: arguments must be a JSON string", tc)
	}
	if got.Tools[0].Type != "function" || got.Tools[0].Function["name"] != "t" || got.Tools[0].Function["parameters"] == nil {
		t.Errorf("tools %+v", got.Tools)
	}
	if got.ToolChoice["type"] != "function" || got.ToolChoice["function"].(map[string]any)["name"] != "t" {
		t.Errorf("tool_choice %v", got.ToolChoice)
	}
	if got.Temperature == nil || *got.Temperature != 0 || got.MaxTokens != DefaultMaxTokens || got.Stream == nil || *got.Stream {
		t.Errorf("temperature %v max_tokens %d stream %v", got.Temperature, got.MaxTokens, got.Stream)
	}
}

func TestOpenAIMaxCompletionTokens(t *testing.T) {
	srv := llmtest.NewOpenAI(t,
		llmtest.Error(llmtest.OpenAI, 400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", nil),
		llmtest.Text(llmtest.OpenAI, "ok"),
		llmtest.Text(llmtest.OpenAI, "ok"),
	)
	p := newClient(t, srv, func(c *Config) { c.MaxTokens = 1000 })
	for range 2 {
		if _, err := p.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if reqs[0].MaxTokens() != 1000 || reqs[1].JSON["max_completion_tokens"] != 1000.0 || reqs[1].JSON["max_tokens"] != nil ||
		reqs[2].JSON["max_completion_tokens"] != 1000.0 {
		t.Errorf("bodies %s / %s", reqs[0].Body, reqs[1].Body)
	}
}

func TestAnthropicWireDetails(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.ToolCalls(llmtest.Anthropic, "thinking", llmtest.Call{ID: "toolu_1", Name: "t", Args: `{"a":1}`}))
	p := newClient(t, srv, nil)
	resp, err := p.Chat(context.Background(), ChatRequest{
		System: "sys",
		Messages: []Message{
			{Role: RoleUser, Content: "hi"},
			{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{
				{ID: "u1", Name: "t", Arguments: json.RawMessage(`{"x":1}`)},
				{ID: "u2", Name: "t", Arguments: json.RawMessage(`{broken`)},
			}},
			{Role: RoleTool, ToolCallID: "u1", Content: "out", IsError: false},
			{Role: RoleTool, ToolCallID: "u2", Content: "bad args", IsError: true},
			{Role: RoleUser, Content: "nudge"},
		},
		Tools:      []ToolDef{{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice: ToolChoiceRequired,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "thinking" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_1" || string(resp.ToolCalls[0].Arguments) != `{"a":1}` ||
		resp.StopReason != "tool_use" || resp.Usage.InputTokens != llmtest.InputTokens {
		t.Errorf("resp %+v", resp)
	}
	r := srv.Requests()[0]
	var got struct {
		System   string `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools      []map[string]any `json:"tools"`
		ToolChoice map[string]any   `json:"tool_choice"`
		MaxTokens  int              `json:"max_tokens"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if got.System != "sys" || len(got.Messages) != 3 || got.MaxTokens != DefaultMaxTokens || got.ToolChoice["type"] != "any" || got.Tools[0]["input_schema"] == nil {
		t.Fatalf("request %s", r.Body)
	}
	asst := got.Messages[1]
	if asst.Role != "assistant" || len(asst.Content) != 2 || asst.Content[1]["input"].(map[string]any) == nil {
		t.Errorf("assistant %+v", asst)
	}
	user := got.Messages[2]
	if user.Role != "user" || len(user.Content) != 3 || user.Content[0]["type"] != "tool_result" || user.Content[0]["tool_use_id"] != "u1" ||
		user.Content[1]["is_error"] != true || user.Content[2]["type"] != "text" {
		t.Errorf("tool results must merge into one user turn: %+v", user)
	}
}

func TestForcedChoiceRefusedFallsBack(t *testing.T) {
	p := llmtest.OpenAI
	s := newSetup(t, p,
		llmtest.Text(p, "prose"),
		llmtest.Text(p, "more prose"),
		llmtest.Error(p, 400, "tool_choice object is not supported", nil),
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
	if got := s.srv.Requests()[3].JSON["tool_choice"]; got != "required" {
		t.Errorf("fallback tool_choice = %v", got)
	}
}

func TestRedact(t *testing.T) {
	r := newRedactor("my-known-secret-value", "abc") // too short values are ignored
	cases := []struct{ in, gone, kept string }{
		{`Authorization: Bearer eyJhbGciOi.abc.def`, "eyJhbGciOi", "Authorization"},
		{`{"Authorization":"Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz", "Authorization"},
		{`curl -H "authorization: token ghp_0123456789abcdefghij0123"`, "ghp_0123456789abcdefghij0123", "curl"},
		{`{"name":"API_KEY","value":"v@lue with spaces"}`, "v@lue with spaces", "API_KEY"},
		{`DB_PASSWORD=hunter2hunter2 MODE=prod`, "hunter2hunter2", "MODE=prod"},
		{`"client_secret": "s3cr3tvalue"`, "s3cr3tvalue", "client_secret"},
		{`key AKIAIOSFODNN7EXAMPLE here`, "AKIAIOSFODNN7EXAMPLE", "here"},
		{`token admin.AbCdEfGhIjKlMnOpQrStUv`, "AbCdEfGhIjKlMnOpQrStUv", "token"},
		{`rct_abcdefghijklmnop1234`, "rct_abcdefghijklmnop1234", ""},
		{`postgres://app:pa55word@db:5432/x`, "pa55word", "postgres://app:"},
		{`uses my-known-secret-value now`, "my-known-secret-value", "uses"},
		{"-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIB\\n-----END RSA PRIVATE KEY-----", "MIIEpAIB", ""},
		{`xoxb-1234567890-abcdefghij`, "xoxb-1234567890-abcdefghij", ""},
		{`sk-ant-api03-abcdefghijklmnopqrstuvwxyz`, "abcdefghijklmnopqrstuvwxyz", ""},
	}
	for _, c := range cases {
		out := r.redact(c.in)
		if strings.Contains(out, c.gone) || !strings.Contains(out, c.kept) || !strings.Contains(out, redacted) {
			t.Errorf("redact(%q) = %q", c.in, out)
		}
	}
	plain := `{"reason":"OOMKilled","exitCode":137,"abc":"abc"}`
	if out := r.redact(plain); out != plain {
		t.Errorf("redact changed ordinary text: %q", out)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Provider: "gemini", Model: "m"},
		{Provider: ProviderOpenAI},
		{Provider: ProviderOpenAI, Model: "m", BaseURL: "ftp://x"},
		{Provider: ProviderAnthropic, Model: "m"},
	}
	for _, c := range bad {
		if _, err := NewProvider(c); err == nil {
			t.Errorf("NewProvider(%+v) accepted", c)
		}
	}
	if _, err := NewProvider(Config{Provider: ProviderOpenAI, Model: "llama3.1", BaseURL: "http://127.0.0.1:11434/v1"}); err != nil {
		t.Error(err)
	}
	c := Config{}.withDefaults()
	if c.MaxTokens != 4096 || c.MaxSteps != 20 || c.ToolResultBudget != 16<<10 || c.MaxRetries != 2 || c.Timeout != DefaultTimeout {
		t.Errorf("defaults %+v", c)
	}
	if n := (Config{MaxRetries: -1}).withDefaults().withDefaults().MaxRetries; n >= 0 {
		t.Errorf("MaxRetries -1 became %d after defaults twice", n)
	}
}
