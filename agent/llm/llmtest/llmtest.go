// Package llmtest runs scripted fake model servers on loopback that speak
// the real wire protocols: OpenAI chat completions (tools, tool_calls,
// tool messages) and Anthropic Messages (tool_use, tool_result). Each server
// answers with a sequence of canned replies and records every request it
// received, for tests to assert on.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Protocol names.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Reply is one canned answer.
type Reply struct {
	Status int               // default 200
	Header map[string]string // extra response headers (e.g. Retry-After)
	Body   string            // raw response body
	Delay  time.Duration     // wait before answering; a client that goes away aborts it
	Hang   bool              // never answer: wait until the client aborts the request
}

// Call is a tool call in a canned reply. Args is the raw arguments text: a
// JSON object, or anything (malformed JSON) for OpenAI, where arguments are
// a string.
type Call struct {
	ID   string
	Name string
	Args string
}

// Request is a request the server received.
type Request struct {
	Protocol string
	Path     string
	Header   http.Header
	Body     []byte
	JSON     map[string]any // nil when the body is not a JSON object
	At       time.Time
}

// Server is a scripted fake model server.
type Server struct {
	// URL is the base URL to configure: http://127.0.0.1:port/v1 for
	// OpenAI, http://127.0.0.1:port for Anthropic.
	URL      string
	Protocol string

	t      testing.TB
	srv    *httptest.Server
	path   string
	mu     sync.Mutex
	script []Reply
	reqs   []Request
	abort  int
	// aborted receives one value per request aborted by the client.
	aborted chan struct{}
}

// NewOpenAI starts an OpenAI chat-completions server on 127.0.0.1.
func NewOpenAI(t testing.TB, replies ...Reply) *Server { return start(t, OpenAI, replies) }

// NewAnthropic starts an Anthropic Messages server on 127.0.0.1.
func NewAnthropic(t testing.TB, replies ...Reply) *Server { return start(t, Anthropic, replies) }

// New starts a server of the named protocol.
func New(t testing.TB, protocol string, replies ...Reply) *Server {
	return start(t, protocol, replies)
}

func start(t testing.TB, protocol string, replies []Reply) *Server {
	t.Helper()
	s := &Server{t: t, Protocol: protocol, script: replies, aborted: make(chan struct{}, 64)}
	switch protocol {
	case OpenAI:
		s.path = "/v1/chat/completions"
	case Anthropic:
		s.path = "/v1/messages"
	default:
		t.Fatalf("llmtest: unknown protocol %q", protocol)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle)) // listens on 127.0.0.1:0
	s.URL = s.srv.URL
	if protocol == OpenAI {
		s.URL += "/v1"
	}
	t.Cleanup(s.srv.Close)
	return s
}

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Remaining is the number of replies not yet used.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Aborted is the number of requests the client aborted before the answer.
func (s *Server) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abort
}

// AbortedC receives a value each time a request is aborted by the client.
func (s *Server) AbortedC() <-chan struct{} { return s.aborted }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Protocol: s.Protocol, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &req.JSON)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	var rep Reply
	ok := len(s.script) > 0
	if ok {
		rep, s.script = s.script[0], s.script[1:]
	}
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != s.path {
		s.t.Errorf("llmtest: %s %s, want POST %s", r.Method, r.URL.Path, s.path)
		writeError(w, s.Protocol, http.StatusNotFound, "not_found_error", "no such route")
		return
	}
	if !ok {
		s.t.Errorf("llmtest: %s script exhausted: unexpected request %d", s.Protocol, len(s.Requests()))
		writeError(w, s.Protocol, http.StatusInternalServerError, "api_error", "script exhausted")
		return
	}
	if rep.Hang || rep.Delay > 0 {
		var wait <-chan time.Time
		if !rep.Hang {
			timer := time.NewTimer(rep.Delay)
			defer timer.Stop()
			wait = timer.C
		}
		select {
		case <-r.Context().Done():
			s.mu.Lock()
			s.abort++
			s.mu.Unlock()
			s.aborted <- struct{}{}
			return
		case <-wait:
		}
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}

func writeError(w http.ResponseWriter, protocol string, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, ErrorBody(protocol, typ, msg))
}

// ErrorBody is an error body in the protocol's shape.
func ErrorBody(protocol, typ, msg string) string {
	if protocol == Anthropic {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
		return string(b)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
	return string(b)
}

// Error is a reply with an HTTP error status and a protocol error body.
func Error(protocol string, status int, msg string, header map[string]string) Reply {
	typ := "api_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status < 500:
		typ = "invalid_request_error"
	}
	return Reply{Status: status, Header: header, Body: ErrorBody(protocol, typ, msg)}
}

// Text is a reply with prose and no tool calls.
func Text(protocol, text string) Reply {
	if protocol == Anthropic {
		return Reply{Body: anthropicBody([]any{map[string]any{"type": "text", "text": text}}, "end_turn")}
	}
	return Reply{Body: openAIBody(&text, nil, "stop")}
}

// ToolCalls is a reply that calls tools (with optional prose before them).
func ToolCalls(protocol, text string, calls ...Call) Reply {
	if protocol == Anthropic {
		var blocks []any
		if text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
		}
		for i, c := range calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("toolu_%02d%s", i, strings.Repeat("x", 4))
			}
			input := json.RawMessage(c.Args)
			if !json.Valid(input) {
				panic("llmtest: Anthropic tool_use input must be valid JSON: " + c.Args)
			}
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
		}
		return Reply{Body: anthropicBody(blocks, "tool_use")}
	}
	var tcs []any
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%02d", i)
		}
		tcs = append(tcs, map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}})
	}
	var content *string
	if text != "" {
		content = &text
	}
	return Reply{Body: openAIBody(content, tcs, "tool_calls")}
}

// Usage of every canned reply, so token accounting can be asserted.
const (
	InputTokens  = 100
	OutputTokens = 20
)

func openAIBody(content *string, toolCalls []any, finish string) string {
	msg := map[string]any{"role": "assistant", "content": content}
	if len(toolCalls) > 0 {
		msg["tool_calls"] = toolCalls
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": InputTokens, "completion_tokens": OutputTokens, "total_tokens": InputTokens + OutputTokens},
	})
	return string(b)
}

func anthropicBody(blocks []any, stop string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": InputTokens, "output_tokens": OutputTokens},
	})
	return string(b)
}

// ToolResult is a tool result the client sent back, in either protocol.
type ToolResult struct {
	ID      string
	Content string
	IsError bool // Anthropic only; OpenAI has no error flag
}

// ToolResults returns the tool results carried by the request, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch r.Protocol {
		case OpenAI:
			if mm["role"] == "tool" {
				id, _ := mm["tool_call_id"].(string)
				c, _ := mm["content"].(string)
				out = append(out, ToolResult{ID: id, Content: c})
			}
		case Anthropic:
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				bb, _ := b.(map[string]any)
				if bb["type"] == "tool_result" {
					if mm["role"] != "user" {
						panic("llmtest: tool_result outside a user message")
					}
					id, _ := bb["tool_use_id"].(string)
					c, _ := bb["content"].(string)
					isErr, _ := bb["is_error"].(bool)
					out = append(out, ToolResult{ID: id, Content: c, IsError: isErr})
				}
			}
		}
	}
	return out
}

// ToolNames returns the names of the tools offered in the request.
func (r Request) ToolNames() []string {
	var out []string
	ts, _ := r.JSON["tools"].([]any)
	for _, t := range ts {
		tm, _ := t.(map[string]any)
		if r.Protocol == OpenAI {
			f, _ := tm["function"].(map[string]any)
			n, _ := f["name"].(string)
			out = append(out, n)
		} else {
			n, _ := tm["name"].(string)
			out = append(out, n)
		}
	}
	return out
}

// ForcedTool returns the tool the request forces, "" when none is forced.
func (r Request) ForcedTool() string {
	switch tc := r.JSON["tool_choice"].(type) {
	case map[string]any:
		if r.Protocol == OpenAI {
			f, _ := tc["function"].(map[string]any)
			n, _ := f["name"].(string)
			return n
		}
		if tc["type"] == "tool" {
			n, _ := tc["name"].(string)
			return n
		}
	}
	return ""
}

// MaxTokens returns the request's max_tokens (0 when absent).
func (r Request) MaxTokens() int {
	v, _ := r.JSON["max_tokens"].(float64)
	return int(v)
}

// Roles returns the roles of the request's messages in order.
func (r Request) Roles() []string {
	var out []string
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		out = append(out, role)
	}
	return out
}

// ToolCallIDs returns the ids of the tool calls the request's assistant
// messages carry (tool_calls for OpenAI, tool_use blocks for Anthropic).
func (r Request) ToolCallIDs() []string {
	var out []string
	msgs, _ := r.JSON["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != "assistant" {
			continue
		}
		if r.Protocol == OpenAI {
			tcs, _ := mm["tool_calls"].([]any)
			for _, tc := range tcs {
				tm, _ := tc.(map[string]any)
				id, _ := tm["id"].(string)
				out = append(out, id)
			}
			continue
		}
		blocks, _ := mm["content"].([]any)
		for _, b := range blocks {
			bb, _ := b.(map[string]any)
			if bb["type"] == "tool_use" {
				id, _ := bb["id"].(string)
				out = append(out, id)
			}
		}
	}
	return out
}
